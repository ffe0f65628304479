"""Fixtures of the OAuth tests: one real Glewlwyd authorization server per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.oauth.glewlwyd import Glewlwyd, available


@pytest.fixture(scope="session")
def glewlwyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Glewlwyd]:
    """Glewlwyd on a free loopback port with the users, scopes and clients of tests/oauth/glewlwyd.py."""
    if not available():
        pytest.skip("glewlwyd is not installed (Debian package glewlwyd; tools/system_packages.sh installs it)")
    server = Glewlwyd(tmp_path_factory.mktemp("glewlwyd")).start()
    try:
        yield server
    finally:
        server.stop()
