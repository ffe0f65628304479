"""The policy store holds a change an allowed call could have made (issue 22), called directly.

Strategy: a real PolicyStore on real files (a policy extending a base); the policy stage's two
reports (`call_started`, `call_ended`) are made by hand, and the watcher's and SIGHUP's entry
(`seen_change`, `sighup`) is called as they call it. A change seen while an allowed call is in
flight, or within the grace after it reached its server, is held (not loaded, shown in `status`,
told to the hold listeners) until `load_now`; a call refused before its server saw it leaves no
grace; a change with nothing in flight loads at once.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcpwall.pipeline._policystore import GRACE_S, PolicyStore

BASE = 'version: "1"\nrules:\n  - {id: a, tools: [x], action: deny}\n'
CHANGED = 'version: "1"\nrules:\n  - {id: a, tools: [x], action: deny}\n  - {id: b, tools: [y], action: deny}\n'


@pytest.fixture
def store(tmp_path: Path) -> PolicyStore:
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "policy.yaml").write_text('version: "1"\ndefaultAction: allow\nextends: [base.yaml]\n')
    return PolicyStore(tmp_path / "policy.yaml")


def call(tool: str = "write_file") -> Any:
    return SimpleNamespace(server="fs", target=tool)


def test_a_change_during_an_allowed_call_is_held_until_a_person_loads_it(store: PolicyStore,
                                                                        tmp_path: Path) -> None:
    told: list[dict[str, Any]] = []
    store.hold_listeners.append(told.append)
    revision = store.current.revision
    store.call_started(1, call())
    (tmp_path / "base.yaml").write_text(CHANGED)
    assert store.changed()
    assert store.seen_change() is False
    held = store.status()["held_reload"]
    assert held is not None
    assert held["files"] == [str(tmp_path / "base.yaml")]
    assert held["call"] == "fs/write_file (in flight)"
    assert told
    assert told[0]["files"] == held["files"]
    store.call_ended(1, forwarded=True)
    time.sleep(0.05)
    assert store.seen_change() is False  # a hold stays until a person
    store.sighup()  # a signal is not a person
    assert store.current.revision == revision
    assert store.load_now("test") is True
    assert store.current.revision != revision
    assert store.status()["held_reload"] is None


def test_the_grace_after_a_forwarded_call_holds_and_a_refused_call_leaves_none(store: PolicyStore,
                                                                              tmp_path: Path) -> None:
    store.call_started(1, call("refused"))
    store.call_ended(1, forwarded=False)
    (tmp_path / "base.yaml").write_text(CHANGED)
    assert store.seen_change() is True  # the refused call never reached a server
    store.call_started(2, call("slow"))
    store.call_ended(2, forwarded=True)
    (tmp_path / "base.yaml").write_text(BASE)
    assert store.seen_change() is False
    assert "fs/slow (ended less than" in store.status()["held_reload"]["call"]
    assert GRACE_S <= 5


def test_a_change_with_nothing_in_flight_loads_at_once_and_a_touch_r_is_still_a_change(
        store: PolicyStore, tmp_path: Path) -> None:
    import os

    base = tmp_path / "base.yaml"
    before = os.stat(base)
    revision = store.current.revision
    base.write_text(CHANGED.replace("id: b", "id: c"))
    os.utime(base, ns=(before.st_atime_ns, before.st_mtime_ns))  # `touch -r`: the old mtime back
    assert store.changed()
    assert store.seen_change() is True
    assert store.current.revision != revision


def test_a_call_its_server_may_still_run_holds_a_change_and_a_failing_probe_holds_too_issue_22(
        store: PolicyStore, tmp_path: Path) -> None:
    """The `writers` probes: a call the gateway gave up on but its server has not answered (review B2)."""
    running: list[str] = ["fs/move_file (id 7, given up on but not answered by the server)"]
    store.writers.append(lambda: running[0] if running else None)
    revision = store.current.revision
    (tmp_path / "base.yaml").write_text(CHANGED)
    assert store.seen_change() is False
    assert store.held is not None
    assert "move_file" in store.held["call"]
    assert store.current.revision == revision
    running.clear()
    assert store.load_now() is True
    (tmp_path / "base.yaml").write_text(BASE)
    assert store.seen_change() is True  # nothing unanswered: live again

    def broken() -> str | None:
        raise RuntimeError("no answer")

    store.writers.append(broken)
    (tmp_path / "base.yaml").write_text(CHANGED)
    assert store.seen_change() is False
