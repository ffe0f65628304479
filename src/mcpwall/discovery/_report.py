"""The risk report as data (JSON) and as Markdown.

`report_data()` is the one source every format is rendered from: a superset
of mcp-seatbelt's `RiskReport` (`summary.totalServers/highRisk/mediumRisk/
lowRisk`, `servers[].name/client/risk/tools/proxied`, `recommendations`), so
seatbelt's `diff` of two reports keeps working, plus the locations (file and
line per client), the deduplicated client list, env and header *keys*, and
the config files that could not be read. Command lines and URLs are
redacted; `render()` scrubs the final text of every known secret value.

Every count is taken from the servers' levels once (`summary.levels`, by
`count_levels`) and every renderer prints those counts and the labels of
`LEVEL_LABELS`, so the table, the `check` footer, the summary, JSON,
Markdown and SARIF cannot disagree about how many servers are critical.
`highRisk` keeps seatbelt's meaning: high *or* critical.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from mcpwall import __version__
from mcpwall.discovery._detect import secret_values
from mcpwall.discovery._model import LEVEL_LABELS, LEVELS, SEVERITY_ORDER, ScanResult, Server, count_levels
from mcpwall.discovery._owasp import owasp_label
from mcpwall.discovery._secrets import MASK, Scrubber, looks_like_token, redact_args, redact_url

REPORT_VERSION = "1"


def _server_data(s: Server) -> dict[str, Any]:
    e = s.first
    command = e.effective_command
    flags = [{"rule": f.rule, "severity": f.severity, "description": f.description, "owasp": list(f.owasp),
              "evidence": f.evidence, "advice": f.advice} for f in s.risk.flags]
    return {
        "name": s.name,
        "names": s.names,
        "client": e.client,
        "clients": s.clients,
        "transport": e.transport,
        "command": redact_command(command) if command else None,
        "args": redact_args(e.effective_args),
        "url": redact_url(e.url) if e.url else None,
        "envKeys": sorted(s.env),
        "headerKeys": sorted(s.headers),
        "guarded": s.guarded,
        "proxied": s.guarded,
        "disabled": all(x.disabled for x in s.entries),
        "locations": [{"client": x.client, "path": str(x.file), "line": x.line, "scope": x.scope, "name": x.name,
                       "project": x.project, "guarded": x.guarded, "wrapped": x.wrap is not None}
                      for x in s.entries],
        "risk": {"score": s.risk.score, "level": s.risk.level, "flags": flags},
        "tools": [{"name": s.name, "description": f["description"], "riskFlags": [f],
                   "policyAction": "deny" if f["severity"] == "critical" else "warn"} for f in flags]
        or [{"name": s.name, "description": "no risk flags", "riskFlags": [], "policyAction": "allow"}],
    }


def redact_command(command: str) -> str:
    """A command as shown: a whole command line in `command` gets its secret words masked."""
    if " " in command.strip():
        return " ".join(redact_args(command.split(" ")))
    return MASK if looks_like_token(command) else command


def advice_order(flag: dict[str, Any]) -> tuple[int, bool]:
    """Worst flag first; among equals, scoping a credential (sensitive-env) after taking it out of the file."""
    return -SEVERITY_ORDER[flag["severity"]], flag["rule"] == "sensitive-env"


def _recommendations(servers: list[dict[str, Any]]) -> list[str]:
    """What to do, worst server first and worst flag first: each flag's advice, said once per server."""
    out: list[str] = []
    for s in servers:  # already in report order: level, then score
        said: set[str] = set()
        for f in sorted(s["risk"]["flags"], key=advice_order):
            text = f["advice"] or f["description"]
            if text not in said:
                said.add(text)
                out.append(f"[{LEVEL_LABELS[f['severity']]}] {s['name']}: {text}")
    unguarded = [s["name"] for s in servers if not s["guarded"]]
    if unguarded:
        one = unguarded[0]
        out.append(f"Route the {len(unguarded)} unguarded server(s) through mcpwall: `mcpwall init` rewrites "
                   f"every client config (a backup is kept), or `mcpwall wrap --name {one} -- COMMAND` guards one.")
    return out


def report_data(result: ScanResult, now: datetime | None = None) -> dict[str, Any]:
    """The report as plain data (what `report --format json` prints)."""
    servers = sorted((_server_data(s) for s in result.servers),
                     key=lambda s: (-SEVERITY_ORDER[s["risk"]["level"]], -s["risk"]["score"], s["name"]))
    counts = count_levels(s["risk"]["level"] for s in servers)
    flags = [f for s in servers for f in s["risk"]["flags"]]
    return {
        "version": REPORT_VERSION,
        "tool": {"name": "mcpwall", "version": __version__},
        "generatedAt": (now or datetime.now(UTC)).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "scan": {"home": str(result.home), "platform": result.platform,
                 "projects": [str(p) for p in result.projects], "seconds": round(result.seconds, 4)},
        "summary": {
            "totalServers": len(servers),
            "levels": counts,
            "critical": counts["critical"],
            "high": counts["high"],
            "highRisk": counts["high"] + counts["critical"],  # seatbelt's field: high or critical
            "mediumRisk": counts["medium"],
            "lowRisk": counts["low"],
            "criticalFlags": sum(1 for f in flags if f["severity"] == "critical"),
            "totalFlags": len(flags),
            "guarded": sum(1 for s in servers if s["guarded"]),
            "configFiles": len(result.files),
            "problems": len(result.problems),
            "blockedCalls": 0, "allowedCalls": 0, "warnedCalls": 0,
        },
        "servers": servers,
        "files": [{"client": f.client, "path": str(f.path), "scope": f.scope, "format": f.fmt, "status": f.status,
                   "error": f.error or None, "servers": len(f.entries)} for f in result.files],
        "problems": [{"client": f.client, "path": str(f.path), "status": f.status, "error": f.error}
                     for f in result.problems],
        "recommendations": _recommendations(servers),
    }


def scrubber_for(result: ScanResult) -> Scrubber:
    return Scrubber(secret_values(result))


def render_json(data: dict[str, Any], scrub: Scrubber | None = None) -> str:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return scrub(text) if scrub else text


# -- Markdown ----------------------------------------------------------------------------------

_DOT = {"critical": "🔴", "high": "🟠", "medium": "🟡", "low": "🟢"}
_LABEL = {level: f"{_DOT[level]} {LEVEL_LABELS[level]}" for level in LEVELS}


def md_cell(text: object) -> str:
    """Text safe inside a Markdown table cell: no pipes, no HTML, no line breaks."""
    s = str(text)
    s = s.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    s = s.replace("<", "&lt;").replace(">", "&gt;").replace("[", "\\[").replace("]", "\\]")
    return re.sub(r"[\r\n]+", " ", s)


def _code(text: str) -> str:
    """Inline code that cannot be broken out of with backticks."""
    text = re.sub(r"[\r\n]+", " ", text)
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def render_markdown(data: dict[str, Any], scrub: Scrubber | None = None) -> str:
    sm = data["summary"]
    lines = ["# mcpwall risk report", "",
             f"Generated {data['generatedAt']} by mcpwall {data['tool']['version']} "
             f"(platform {md_cell(data['scan']['platform'])}).", "",
             "## Summary", "", "| Metric | Count |", "|---|---|",
             f"| Servers | {sm['totalServers']} |",
             *(f"| {_LABEL[level]} | {sm['levels'][level]} |" for level in LEVELS),
             f"| Risk flags | {sm['totalFlags']} |",
             f"| Guarded by mcpwall | {sm['guarded']} |", f"| Config files read | {sm['configFiles']} |",
             f"| Files with problems | {sm['problems']} |", ""]
    if data["servers"]:
        lines += ["## Servers", "", "| Server | Clients | Transport | Risk | Score | Flags | Guarded |",
                  "|---|---|---|---|---|---|---|"]
        for s in data["servers"]:
            lines.append(f"| {md_cell(s['name'])} | {md_cell(', '.join(s['clients']))} | {s['transport']} | "
                         f"{_LABEL[s['risk']['level']]} | {s['risk']['score']} | "
                         f"{md_cell(', '.join(f['rule'] for f in s['risk']['flags']) or '-')} | "
                         f"{'yes' if s['guarded'] else 'no'} |")
        lines.append("")
        for s in data["servers"]:
            lines += [f"### {md_cell(s['name'])}", ""]
            launch = s["url"] if s["url"] else " ".join([s["command"] or "", *s["args"]])
            lines.append(f"- **Launch:** {_code(launch)}")
            lines.append(f"- **Risk:** {_LABEL[s['risk']['level']]} (score {s['risk']['score']})")
            if s["envKeys"]:
                lines.append(f"- **Env keys:** {md_cell(', '.join(s['envKeys']))}")
            if s["headerKeys"]:
                lines.append(f"- **Header keys:** {md_cell(', '.join(s['headerKeys']))}")
            for loc in s["locations"]:
                where = f"{loc['path']}:{loc['line']}" if loc["line"] else loc["path"]
                lines.append(f"- **{md_cell(loc['client'])}** ({loc['scope']}) {_code(where)}"
                             + (" - guarded" if loc["guarded"] else ""))
            if s["risk"]["flags"]:
                lines += ["", "| Rule | Severity | OWASP LLM 2025 | Evidence | What to do |",
                          "|---|---|---|---|---|"]
                for f in s["risk"]["flags"]:
                    lines.append(f"| {f['rule']} | {LEVEL_LABELS[f['severity']]} | "
                                 f"{md_cell(', '.join(owasp_label(t) for t in f['owasp']))} | "
                                 f"{md_cell(f['evidence'])} | {md_cell(f['advice'])} |")
            lines.append("")
    else:
        lines += ["No MCP servers found.", ""]
    if data["problems"]:
        lines += ["## Config files that could not be read", "", "| Client | File | Status | Reason |",
                  "|---|---|---|---|"]
        for p in data["problems"]:
            lines.append(f"| {md_cell(p['client'])} | {md_cell(p['path'])} | {p['status']} | {md_cell(p['error'])} |")
        lines.append("")
    if data["recommendations"]:
        lines += ["## Recommendations", ""] + [f"- {md_cell(r)}" for r in data["recommendations"]] + [""]
    text = "\n".join(lines)
    return scrub(text) if scrub else text


__all__ = ["REPORT_VERSION", "advice_order", "md_cell", "redact_command", "render_json", "render_markdown", "report_data", "scrubber_for"]
