"""`mcpwall test-policy`: run seatbelt-format policy tests (exit 1 on a failure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console

from mcpwall.cli._common import home_option, json_option, load_checked_engine, policy_path_for, print_json
from mcpwall.cli._simulate import parse_now
from mcpwall.errors import ConfigError
from mcpwall.policy import Call, Context, evaluate, prepare

_ACTIONS = {"allow", "deny", "block", "warn", "redact", "ask", "rewrite"}


def load_tests(path: Path) -> list[dict[str, Any]]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: test file not found") from exc
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read test file: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise ConfigError(f"{path}: expected a YAML mapping with a 'tests' list")
    tests: list[dict[str, Any]] = doc["tests"]
    for i, t in enumerate(tests):
        if not isinstance(t, dict) or "tool" not in t or "expect" not in t:
            raise ConfigError(f"{path}: tests[{i}] needs at least 'tool' and 'expect'")
        if t["expect"] not in _ACTIONS:
            raise ConfigError(f"{path}: tests[{i}].expect must be one of {sorted(_ACTIONS)}")
        if "args" in t and not isinstance(t["args"], dict):
            raise ConfigError(f"{path}: tests[{i}].args must be a mapping")
    return tests


def run_case(engine: Any, case: dict[str, Any]) -> dict[str, Any]:
    call = Call(method=case.get("method", "tools/call"), name=str(case["tool"]),
                arguments=case.get("args") or {}, server=str(case.get("server", "")),
                description=str(case.get("description", "")), client=str(case.get("client", "test-policy")),
                agent=str(case.get("agent", "")))
    now = parse_now(str(case["now"])) if case.get("now") else parse_now(None)
    decision = evaluate(engine.compiled, prepare(call), Context(now=now, requests_last_minute=1))
    expect = "deny" if case["expect"] == "block" else case["expect"]
    failures = []
    if decision.action != expect:
        failures.append(f"expected {expect} but got {decision.action}")
    reason = case.get("matchReason")
    if reason is not None and not any(str(reason).lower() in r.lower() for r in decision.reasons):
        failures.append(f"expected a reason containing {reason!r}, got: {'; '.join(decision.reasons)}")
    for rid in case.get("expectRuleIds") or []:
        if rid not in decision.rule_ids:
            failures.append(f"expected rule id {rid!r} among {list(decision.rule_ids)}")
    return {"name": case.get("name", case["tool"]), "passed": not failures, "action": decision.action,
            "failures": failures, "reasons": list(decision.reasons)}


@click.command("test-policy")
@click.argument("test_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy under test (default: <home>/policy.yaml, else the built-in default).")
@json_option
@home_option
def test_policy(test_file: Path, policy_file: Path | None, as_json: bool, home: Path | None) -> None:
    """Run policy unit tests: `tests: [{name, tool, args, expect, matchReason}]`."""
    tests = load_tests(test_file)
    engine = load_checked_engine(policy_path_for(home, policy_file))
    results = [run_case(engine, case) for case in tests]
    failed = sum(not r["passed"] for r in results)
    if as_json:
        print_json({"passed": len(results) - failed, "failed": failed, "results": results})
    else:
        console = Console()
        for r in results:
            mark = "[green]✓[/]" if r["passed"] else "[red]✗[/]"
            console.print(f"{mark} {r['name']} — {r['action'].upper()}", highlight=False)
            for f in r["failures"]:
                console.print(f"    [red]{f}[/]", highlight=False)
        console.print(f"\n[bold]{len(results) - failed}[/] passed, [bold]{failed}[/] failed, "
                      f"[bold]{len(results)}[/] total")
    if failed:
        raise click.exceptions.Exit(1)
