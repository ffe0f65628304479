"""mcp-observatory scan results as suggested policy rules (`mcpwall import-observatory`).

Two artifact shapes are read: the flat `{"findings": [...]}` that
mcp-seatbelt's importer expects (id, severity, title, description, tool,
path, host, envVar), and mcp-observatory's run artifact, whose findings sit
in `checks[].evidence[].findings[]` (security, attack-sim and schema-quality
records), `checks[].evidence[].diagnostics[]`, failing checks and
`fatalError`. Each finding becomes one rule with seatbelt's mapping: the
target from what the finding names (tool -> command, path -> file, host ->
network, env var -> env, else by keywords), `contains` on those names, and
the action from the severity: critical and high deny, medium and low warn.
(Seatbelt's documentation says low allows; its code warns, and an allow
rule here would really loosen the policy, so low warns.) Informational
findings make no rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

_SEVERITIES = ("critical", "high", "medium", "low")


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _severity(value: Any, status: Any = None) -> str:
    s = _text(value).lower()
    if s in _SEVERITIES:
        return s
    if s in ("error",):
        return "high"
    if s in ("warning", "warn"):
        return "medium"
    if s in ("info", "note", "none"):
        return "info"
    return {"fail": "high", "partial": "medium", "flaky": "medium"}.get(_text(status).lower(), "info")


def _run_findings(artifact: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    target = artifact.get("target")
    target_id = (_text(target.get("targetId")) if isinstance(target, Mapping) else "") or "target"
    for check in artifact.get("checks") or []:
        if not isinstance(check, Mapping):
            continue
        cid, status = _text(check.get("id")) or "check", check.get("status")
        structured = False
        diagnostics: list[str] = []
        for evidence in check.get("evidence") or []:
            if not isinstance(evidence, Mapping):
                continue
            diagnostics.extend(d for d in evidence.get("diagnostics") or [] if isinstance(d, str))
            for i, rec in enumerate(evidence.get("findings") or []):
                if not isinstance(rec, Mapping):
                    continue
                rule = _text(rec.get("ruleId")) or cid
                message = _text(rec.get("message")) or _text(rec.get("issue"))
                if not message:
                    continue
                structured = True
                tool = _text(rec.get("toolName")) or _text(rec.get("itemName"))
                yield {"id": f"{cid}-{rule}-{i + 1}", "severity": _severity(rec.get("severity"), status),
                       "title": f"{cid}: {rule}", "description": message,
                       "tool": tool if tool and tool not in ("(target)", target_id) else None}
        if structured:
            continue
        for i, d in enumerate(diagnostics):
            m = re.match(r"^\[(\w+)\]\s*(.*)$", d, re.S)
            sev, msg = (m.group(1), m.group(2)) if m else (None, d)
            yield {"id": f"{cid}-diagnostic-{i + 1}", "severity": _severity(sev, status), "title": f"{cid}: diagnostic",
                   "description": msg}
        if not diagnostics and _text(status).lower() not in ("pass", "skipped", "unsupported", ""):
            yield {"id": f"{cid}-{_text(status)}", "severity": _severity(None, status), "title": f"{cid}: {status}",
                   "description": _text(check.get("message")) or f"check {cid} {status}"}
    if _text(artifact.get("fatalError")):
        yield {"id": "run-fatal-error", "severity": "high", "title": "Run failed before MCP checks completed",
               "description": _text(artifact["fatalError"]).splitlines()[0]}


def read_findings(path: Path) -> list[dict[str, Any]] | None:
    """The findings of an artifact, or None when the file is not an mcp-observatory artifact."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, Mapping):
        return None
    if isinstance(data.get("findings"), list):
        return [dict(f) for f in data["findings"] if isinstance(f, Mapping)]
    if isinstance(data.get("checks"), list):
        return list(_run_findings(data))
    return None


def _target(f: Mapping[str, Any]) -> str:
    text = (_text(f.get("description")) + " " + _text(f.get("title"))).lower()
    if f.get("tool") or "tool" in text or "command" in text:
        return "command"
    if f.get("path") or any(w in text for w in ("file", "directory", "path")):
        return "file"
    if f.get("host") or any(w in text for w in ("url", "network", "host", "http")):
        return "network"
    if f.get("envVar") or any(w in text for w in ("env", "secret", "credential")):
        return "env"
    if any(w in text for w in ("process", "spawn", "exec", "fork")):
        return "process"
    return "command"


def _values(f: Mapping[str, Any]) -> list[str]:
    values = [_text(f.get(k)) for k in ("tool", "path", "host", "envVar")]
    values = [v for v in values if v]
    if not values:
        values = [v for v in (_text(f.get("id")), _text(f.get("title"))) if v]
    return list(dict.fromkeys(values))


def finding_rule(f: Mapping[str, Any], index: int) -> dict[str, Any] | None:
    severity = _severity(f.get("severity"))
    if severity == "info":
        return None
    raw_id = _text(f.get("id")) or f"finding-{index + 1}"
    rule_id = re.sub(r"-+", "-", re.sub(r"[^A-Za-z0-9_-]", "-", f"observatory-{raw_id}")).strip("-")
    values = _values(f)
    if not values:
        return None
    return {"id": rule_id, "description": _text(f.get("title")) or _text(f.get("description")) or rule_id,
            "target": _target(f), "match": "contains", "values": values,
            "action": "deny" if severity in ("critical", "high") else "warn"}


def import_observatory(path: Path) -> list[dict[str, Any]]:
    """Suggested rules for one artifact (empty when it holds no actionable finding)."""
    rules: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, f in enumerate(read_findings(path) or []):
        rule = finding_rule(f, i)
        if rule is None:
            continue
        base, n = rule["id"], 2
        while rule["id"] in seen:
            rule["id"], n = f"{base}-{n}", n + 1
        seen.add(rule["id"])
        rules.append(rule)
    return rules


def discover_artifacts(base: Path) -> list[Path]:
    """mcp-observatory artifacts under `base`: .mcp-observatory/runs/, .mcp-observatory-metrics/ and base."""
    dirs = [base / ".mcp-observatory" / "runs", base / ".mcp-observatory-metrics", base]
    found: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            continue
        candidates = sorted(d.glob("*.json")) + sorted(d.glob("*/*.json"))
        for path in candidates:
            if path not in found and read_findings(path) is not None:
                found.append(path)
    return found


__all__ = ["discover_artifacts", "finding_rule", "import_observatory", "read_findings"]
