"""Deciding a call as `mcpwall simulate` does on the built-in default policy, for the call-detection tests."""

from __future__ import annotations

from datetime import datetime

from mcpwall.policy import Call, PolicyEngine

ENGINE = PolicyEngine.from_template("default")
#: A weekday noon: the default policy's business-hours allow rule is in force.
NOON = datetime(2026, 12, 2, 12, 0).astimezone()


def shell_rules(command: str) -> tuple[str, tuple[str, ...]]:
    """The action and the deciding rules of `run_command(command=...)`."""
    d = ENGINE.decide(Call(name="run_command", arguments={"command": command}, server="s"), now=NOON)
    return d.action, tuple(d.rule_ids)


def assert_stopped(command: str) -> None:
    """A rule denies or asks (the default action's deny is not detection)."""
    action, ids = shell_rules(command)
    assert action in ("deny", "ask"), (command, action, ids)
    assert ids, (command, action)


def assert_left_to_default(command: str) -> None:
    """No rule denies or asks."""
    action, ids = shell_rules(command)
    assert not (action in ("deny", "ask") and ids), (command, action, ids)


__all__ = ["ENGINE", "NOON", "assert_left_to_default", "assert_stopped", "shell_rules"]
