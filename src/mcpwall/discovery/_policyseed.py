"""The `policy.yaml` that `init` writes: the built-in default, seeded from the scan.

It starts from `mcpwall.policy.template_text("default")` (comments and all),
sets `mode` (`audit` unless `--policy enforce`), seeds `allowlist.hosts` with
the hosts of the remote servers found, and lists those remote servers under
`servers:` so the gateway can reach them once their clients point at
`http://127.0.0.1:9420/mcp/NAME`. Server names are never put in
`allowlist.tools`: that list holds tool names (docs/COMPATIBILITY.md row 15).
The result is loaded with the policy loader before it is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from mcpwall.discovery._backup import init_dir, sha256, write_atomic
from mcpwall.errors import ConfigError

HEADER = "# Written by `mcpwall init`"


def policy_text(mode: str, hosts: list[str], servers: Mapping[str, Mapping[str, Any]],
                found: int, now: datetime | None = None) -> str:
    """The policy file's text; raises ConfigError if it would not load."""
    from mcpwall.policy import parse_policy_text, resolve_document, template_text

    if mode not in ("audit", "enforce"):
        raise ConfigError(f"--policy must be audit or enforce, not {mode!r}")
    base = template_text("default")
    stamp = (now or datetime.now(UTC)).isoformat(timespec="seconds").replace("+00:00", "Z")
    header = (f"{HEADER} on {stamp} from {found} MCP server(s) found on this machine.\n"
              f"# mode: {mode}. Review the rules, then `mcpwall proxy` (remote servers) and the\n"
              "# rewritten client configs (`mcpwall wrap`, local servers) apply it.\n")
    text, n = re.subn(r"(?m)^mode: \w+$", f"mode: {mode}", base, count=1)
    hosts_block = "  hosts: []" if not hosts else "  hosts:\n" + "".join(f"    - {_scalar(h)}\n" for h in hosts).rstrip("\n")
    text, m = re.subn(r"(?m)^  hosts: \[\]$", lambda _: hosts_block, text, count=1)
    if n != 1 or m != 1 or not text.rstrip().endswith("envVars: []"):
        text = _rebuild(base, mode, hosts)
    if servers:
        text = text.rstrip("\n") + "\n" + yaml.safe_dump({"servers": {k: dict(v) for k, v in servers.items()}},
                                                         sort_keys=False, default_flow_style=False, width=1000)
    text = header + text
    doc, _ = parse_policy_text(text, "<init policy>")
    resolve_document(doc, "<init policy>")
    return text


def _scalar(value: str) -> str:
    return value if re.fullmatch(r"[A-Za-z0-9.-]+", value) else "'" + value.replace("'", "''") + "'"


def _rebuild(base: str, mode: str, hosts: list[str]) -> str:
    """Fallback when the template's layout changed: load, set, dump (comments are lost)."""
    data = yaml.safe_load(base)
    data["mode"] = mode
    allow = data.setdefault("allowlist", {})
    allow["hosts"] = sorted(set(allow.get("hosts") or []) | set(hosts))
    return str(yaml.safe_dump(data, sort_keys=False, width=1000))


def _marker(home: Path) -> Path:
    return init_dir(home) / "policy.json"


def policy_state(home: Path) -> str:
    """`absent`, `ours` (written by init and unchanged since) or `user` (anything else)."""
    path = home / "policy.yaml"
    if not path.exists():
        return "absent"
    try:
        recorded = json.loads(_marker(home).read_text(encoding="utf-8")).get("sha256")
        return "ours" if recorded == sha256(path.read_bytes()) else "user"
    except (OSError, ValueError, AttributeError):
        return "user"


def previous_seed(home: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The servers and hosts an earlier init put in policy.yaml (kept when it is regenerated)."""
    try:
        data = yaml.safe_load((home / "policy.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}, []
    if not isinstance(data, dict):
        return {}, []
    raw_servers, raw_allow = data.get("servers"), data.get("allowlist")
    servers: dict[str, Any] = raw_servers if isinstance(raw_servers, dict) else {}
    allow: dict[str, Any] = raw_allow if isinstance(raw_allow, dict) else {}
    hosts = [h for h in allow.get("hosts") or [] if isinstance(h, str)]
    return {str(k): dict(v) for k, v in servers.items() if isinstance(v, dict)}, hosts


def write_policy(home: Path, text: str) -> Path:
    """Write policy.yaml (0600: it may hold upstream credentials) and remember it is init's."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "policy.yaml"
    data = text.encode("utf-8")
    write_atomic(path, data, 0o600)
    init_dir(home).mkdir(parents=True, exist_ok=True)
    write_atomic(_marker(home), json.dumps({"sha256": sha256(data)}).encode(), 0o600)
    return path


__all__ = ["HEADER", "policy_state", "policy_text", "previous_seed", "write_policy"]
