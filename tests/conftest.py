"""Shared fixtures. Async tests run under anyio with a timeout (pytest-timeout)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

#: The test files that run for minutes (a whole conformance run in one module fixture): collected first, so
#: that under `make test`'s workers (pytest-xdist, a file to a worker) none is left running alone at the end.
#: (xdist hands each worker one file, then a second: so the first two start together and the OAuth
#: scenarios, timed by the suite, start on the first worker once its conformance run is over)
_LONGEST = ("tests/conformance2/test_conformance2.py", "tests/conformance/test_conformance.py",
            "tests/conformance2/test_conformance_auth.py")
#: Collected last: it runs tests/security and tests/stages again as Python, two pytest processes side by
#: side, so it keeps both cores busy alone; run beside another worker's conformance runs, the three
#: starved the suite's OAuth driver past its time limit.
_LAST = ("tests/test_native.py",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: n for n, name in enumerate(_LONGEST)} | {name: len(_LONGEST) + 2 for name in _LAST}

    def place(item: pytest.Item) -> int:
        try:
            return rank.get(item.path.relative_to(config.rootpath).as_posix(), len(_LONGEST) + 1)
        except ValueError:  # (a test outside the tree)
            return len(_LONGEST) + 1

    items.sort(key=place)  # (stable: each file's tests keep their order)


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
