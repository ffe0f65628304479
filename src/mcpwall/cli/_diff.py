"""`mcpwall diff`: compare two policy files (rules by id) or two JSON risk reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from mcpwall.cli._common import home_option, json_option, print_json
from mcpwall.policy import load_policy


def policy_diff(old: Path, new: Path) -> dict[str, Any]:
    a, b = load_policy(old), load_policy(new)
    old_rules = {p.rule.id: p.rule.model_dump(exclude_none=True) for p in a.rules + a.corp_rules}
    new_rules = {p.rule.id: p.rule.model_dump(exclude_none=True) for p in b.rules + b.corp_rules}
    modified = []
    for rid in old_rules.keys() & new_rules.keys():
        before, after = old_rules[rid], new_rules[rid]
        if before != after:
            fields = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            modified.append({"id": rid, "fields": fields,
                             "changes": {k: {"old": before.get(k), "new": after.get(k)} for k in fields}})
    settings: dict[str, dict[str, object]] = {}
    for name, x, y in (("mode", a.mode, b.mode), ("defaultAction", a.default_action, b.default_action),
                       ("defaultTimeoutMs", a.default_timeout_ms, b.default_timeout_ms),
                       ("allowSampling", a.allow_sampling, b.allow_sampling)):
        if x != y:
            settings[name] = {"old": x, "new": y}
    allow = {}
    for key in ("tools", "paths", "hosts", "envVars"):
        old_set: set[str] = set(getattr(a.allowlist, key))
        new_set: set[str] = set(getattr(b.allowlist, key))
        if old_set != new_set:
            allow[key] = {"added": sorted(new_set - old_set), "removed": sorted(old_set - new_set)}
    return {
        "kind": "policy",
        "added": sorted(new_rules.keys() - old_rules.keys()),
        "removed": sorted(old_rules.keys() - new_rules.keys()),
        "modified": sorted(modified, key=lambda m: m["id"]),
        "settings": settings,
        "allowlist": allow,
    }


def _is_report(path: Path) -> bool:
    if path.suffix.lower() != ".json":
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "servers" in data


@click.command()
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
@home_option
def diff(old: Path, new: Path, as_json: bool, home: Path | None) -> None:
    """Show what changed between two policy files, or two JSON risk reports."""
    if _is_report(old) and _is_report(new):
        from mcpwall.discovery import report_diff

        result = report_diff(old, new)
    else:
        result = policy_diff(old, new)
    if as_json:
        print_json(result)
        return
    console = Console(highlight=False)
    if result["kind"] != "policy":
        from mcpwall.discovery import print_report_diff

        print_report_diff(console, result)
        return
    for rid in result["added"]:
        console.print(f"[green]+ {rid}[/]")
    for rid in result["removed"]:
        console.print(f"[red]- {rid}[/]")
    for m in result["modified"]:
        console.print(f"[yellow]~ {m['id']}[/] ({', '.join(m['fields'])})")
    for name, change in result["settings"].items():
        console.print(f"[yellow]~ {name}[/]: {change['old']} -> {change['new']}")
    for key, change in result["allowlist"].items():
        console.print(f"[yellow]~ allowlist.{key}[/]: +{change['added']} -{change['removed']}")
    if not any((result["added"], result["removed"], result["modified"], result["settings"], result["allowlist"])):
        console.print("No differences.")
