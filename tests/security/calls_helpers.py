"""Deciding a call as `mcpwall simulate` does on the built-in default policy, for the call-detection tests."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from mcpwall.policy import Call, Context, PolicyEngine, evaluate, prepare
from mcpwall.policy._evaluate import evaluate_slow

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


def paths_disagree(calls: Iterable[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The calls the fast path (`_plan.decide_fast`) and the reference path (`_evaluate.evaluate_slow`) decide
    differently on the default policy at noon: (tool, arguments) of each, none expected."""
    policy = ENGINE.compiled
    ctx = Context(now=NOON)
    out = []
    for tool, server, arguments in calls:
        facts = prepare(Call(name=tool, arguments=arguments, server=server))
        fast, slow = evaluate(policy, facts, ctx), evaluate_slow(policy, facts, ctx)
        if (fast.action, fast.rule_ids) != (slow.action, slow.rule_ids):
            out.append((tool, arguments))
    return out


__all__ = ["ENGINE", "NOON", "assert_left_to_default", "assert_stopped", "paths_disagree", "shell_rules"]
