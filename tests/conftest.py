"""Shared fixtures. Async tests run under anyio with a timeout (pytest-timeout)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

#: The test files that run for minutes (a whole conformance run in one module fixture, the Python re-run of
#: tests/security and tests/stages): collected first, so that under `make test`'s workers (pytest-xdist, a
#: file to a worker) they start together and none is left running alone at the end.
_LONGEST = ("tests/test_native.py", "tests/conformance2/test_conformance2.py",
            "tests/conformance2/test_conformance_auth.py", "tests/conformance/test_conformance.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    first = {name: n for n, name in enumerate(_LONGEST)}

    def rank(item: pytest.Item) -> int:
        try:
            return first.get(item.path.relative_to(config.rootpath).as_posix(), len(first))
        except ValueError:  # (a test outside the tree)
            return len(first)

    items.sort(key=rank)  # (stable: each file's tests keep their order)


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


@pytest.fixture(autouse=True, scope="session")
def _anchors_in_a_temporary_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The ledger's head anchors (issue 22) go to a directory of this run, not the user's ~/.local/state;
    gateways the tests start inherit it."""
    import os

    os.environ.setdefault("MCPWALL_ANCHOR_DIR", str(tmp_path_factory.mktemp("anchors")))
    # upstream OAuth grants (issue 26): the file store's keys in this run's directory, never the user's
    # ~/.config, and never a desktop keyring
    os.environ.setdefault("MCPWALL_KEY_DIR", str(tmp_path_factory.mktemp("keys")))
    os.environ.setdefault("MCPWALL_KEYRING", "off")
