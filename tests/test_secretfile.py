"""Secrets generated on first start (the ledger key, the gateway token) when several mcpwall processes
start together on a fresh home, as a desktop client starts every configured `mcpwall wrap` at once:
none of them may read the file half-written, and all must use the one secret the file holds."""

from __future__ import annotations

import errno
import os
import secrets
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from mcpwall._secretfile import create_once
from mcpwall._token import TOKEN_ENV, load_token, token_path
from mcpwall.ledger._chain import key_path, load_key


def _first_call_waits(real: Callable[[int], str], generating: threading.Event,
                      go_on: threading.Event) -> Callable[[int], str]:
    """`real`, except that the first call signals `generating` and waits for `go_on` before answering."""
    calls = []

    def fake(n: int) -> str:
        calls.append(n)
        if len(calls) == 1:
            generating.set()
            assert go_on.wait(10)
        return real(n)

    return fake


def _race(generate: str, load: Callable[[], object], monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """The first process to start is held while it generates its secret; a second one starts and finishes
    meanwhile; then the first goes on. Returns (first's result, second's result)."""
    generating, go_on = threading.Event(), threading.Event()
    monkeypatch.setattr(secrets, generate, _first_call_waits(getattr(secrets, generate), generating, go_on))
    results: dict[str, object] = {}

    def first() -> None:
        try:
            results["first"] = load()
        except Exception as exc:  # the assertion on the results reports it
            results["first"] = exc

    thread = threading.Thread(target=first)
    thread.start()
    assert generating.wait(10)
    try:
        results["second"] = load()
    finally:
        go_on.set()
        thread.join(10)
    return results["first"], results["second"]


def test_a_ledger_key_being_generated_is_never_read_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPWALL_LEDGER_KEY", raising=False)
    first, second = _race("token_hex", lambda: load_key(tmp_path), monkeypatch)
    on_disk = key_path(tmp_path).read_text().strip().encode()
    assert first == second == on_disk
    assert len(on_disk) == 64
    assert stat.S_IMODE(key_path(tmp_path).stat().st_mode) == 0o600


def test_gateways_starting_together_use_the_token_in_the_file(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    first, second = _race("token_urlsafe", lambda: load_token(tmp_path, None)[0], monkeypatch)
    on_disk = token_path(tmp_path).read_text().strip()
    # before: the held gateway replaced the file with its own token after the other had read it
    assert first == second == on_disk
    assert stat.S_IMODE(token_path(tmp_path).stat().st_mode) == 0o600


_START = """
import sys, time
from pathlib import Path
from mcpwall.ledger._chain import load_key
from mcpwall._token import load_token
home, go = Path(sys.argv[1]), Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
print(load_key(home).decode(), load_token(home, None)[0])
"""


def test_many_processes_starting_at_once_agree_on_one_key_and_one_token(tmp_path: Path) -> None:
    home, go = tmp_path / "home", tmp_path / "go"
    env = {k: v for k, v in os.environ.items() if k not in (TOKEN_ENV, "MCPWALL_LEDGER_KEY")}
    procs = [subprocess.Popen([sys.executable, "-c", _START, str(home), str(go)], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(12)]
    go.touch()
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        answers.append(out.split())
    assert answers == [[key_path(home).read_text().strip(), token_path(home).read_text().strip()]] * 12
    assert sorted(p.name for p in (home / "run").iterdir()) == ["gateway.token", "ledger.key"]  # no temporaries


def test_without_hard_links_the_secret_is_still_created_once(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "run" / "secret"
    assert create_once(path, "first")
    assert not create_once(path, "second")
    assert path.read_text() == "first\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["secret"]
