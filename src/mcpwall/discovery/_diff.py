"""`mcpwall diff A.json B.json` for two JSON risk reports (ours or mcp-seatbelt's).

Servers are matched by name. The result says which servers appeared and
disappeared, whose score moved (and by how much, with the level change), and
which risk flags each kept server gained or lost.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcpwall.errors import ConfigError


def _load(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable JSON risk report") from exc
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, list):
        raise ConfigError(f"{path}: not a risk report (no 'servers' list)")
    out: dict[str, dict[str, Any]] = {}
    for s in servers:
        if isinstance(s, dict) and isinstance(s.get("name"), str):
            out.setdefault(s["name"], s)
    return out


def _risk(server: dict[str, Any]) -> tuple[int, str, set[str]]:
    raw = server.get("risk")
    risk: dict[str, Any] = raw if isinstance(raw, dict) else {}
    flags = {f.get("rule") for f in risk.get("flags", []) if isinstance(f, dict) and f.get("rule")}
    score = risk.get("score", 0)
    return (score if isinstance(score, int) else 0), str(risk.get("level", "low")), {str(f) for f in flags}


def report_diff(old: Path, new: Path) -> dict[str, Any]:
    """The changes between two JSON risk reports (`kind: "report"`)."""
    a, b = _load(old), _load(new)
    changes, modified, flag_changes = [], [], {}
    for name in sorted(a.keys() & b.keys()):
        old_score, old_level, old_flags = _risk(a[name])
        new_score, new_level, new_flags = _risk(b[name])
        if old_score != new_score:
            changes.append({"name": name, "oldScore": old_score, "newScore": new_score,
                            "delta": new_score - old_score, "oldLevel": old_level, "newLevel": new_level})
        if old_flags != new_flags:
            modified.append(name)
            flag_changes[name] = {"added": sorted(new_flags - old_flags), "removed": sorted(old_flags - new_flags)}
    return {
        "kind": "report",
        "old": str(old),
        "new": str(new),
        "added": sorted(b.keys() - a.keys()),
        "removed": sorted(a.keys() - b.keys()),
        "modified": modified,
        "riskScoreChanges": changes,
        "flags": flag_changes,
    }


def print_report_diff(console: Any, result: dict[str, Any]) -> None:
    """Print a report diff with rich markup (green added, red removed, score arrows)."""
    from rich.markup import escape

    for name in result["added"]:
        console.print(f"[green]+ {escape(name)}[/] (new server)")
    for name in result["removed"]:
        console.print(f"[red]- {escape(name)}[/] (server removed)")
    for c in result["riskScoreChanges"]:
        arrow = f"[red]↑ +{c['delta']}[/]" if c["delta"] > 0 else f"[green]↓ {c['delta']}[/]"
        level = f" ({c['oldLevel']} -> {c['newLevel']})" if c["oldLevel"] != c["newLevel"] else ""
        console.print(f"[yellow]~ {escape(c['name'])}[/]: score {c['oldScore']} -> {c['newScore']} {arrow}{level}")
    for name, change in result["flags"].items():
        parts = [f"+{r}" for r in change["added"]] + [f"-{r}" for r in change["removed"]]
        console.print(f"[yellow]~ {escape(name)}[/] flags: {escape(' '.join(parts))}")
    if not any((result["added"], result["removed"], result["riskScoreChanges"], result["flags"])):
        console.print("No differences.")


__all__ = ["print_report_diff", "report_diff"]
