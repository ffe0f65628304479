"""Shared fixtures. Async tests run under anyio with a timeout (pytest-timeout)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def write_policy(tmp_path: Path) -> Callable[..., Path]:
    """Write a policy YAML text to a file and return its path."""

    def write(text: str, name: str = "policy.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
