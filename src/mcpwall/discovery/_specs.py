"""`mcpwall proxy --discover`: the discovered servers as gateway `ServerSpec`s.

Names are the scan's deduplicated, gateway-valid names. Entries that already
point at the gateway are left out (the gateway would call itself), entries
already wrapped by `mcpwall wrap` contribute the real server command, and
disabled servers are left out. `${env:VAR}`, `${VAR}` and `$VAR` in env and
header values are expanded from mcpwall's environment, as the clients do;
`${workspaceFolder}` becomes the project directory of a project's config.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcpwall.discovery._detect import scan
from mcpwall.discovery._entries import detect_wrap
from mcpwall.discovery._locations import ScanTarget
from mcpwall.discovery._model import ServerEntry
from mcpwall.discovery._risk import Launch, assess
from mcpwall.policy import ServerSpec

log = logging.getLogger("mcpwall.discovery")
_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)|\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(value: str, environ: Mapping[str, str], project: str | None = None) -> str:
    if project:
        value = value.replace("${workspaceFolder}", project).replace("${workspaceRoot}", project)
    return _REF.sub(lambda m: environ.get(m.group(1) or m.group(2) or m.group(3), m.group(0)), value)


def spec_for(entry: ServerEntry, env: Mapping[str, str], headers: Mapping[str, str],
             environ: Mapping[str, str]) -> ServerSpec:
    project = entry.project
    if entry.url:
        return ServerSpec(url=expand(entry.url, environ, project), transport=entry.transport,
                          headers={k: expand(v, environ, project) for k, v in headers.items()})
    command = entry.effective_command or ""
    return ServerSpec(command=expand(command, environ, project),
                      args=[expand(a, environ, project) for a in entry.effective_args],
                      env={k: expand(v, environ, project) for k, v in env.items()},
                      cwd=expand(entry.cwd, environ, project) if entry.cwd else None)


def discovered_server_specs(target: ScanTarget | None = None) -> dict[str, ServerSpec]:
    """Every server discovered on this machine, as the gateway's upstream specs."""
    result = scan(target)
    out: dict[str, ServerSpec] = {}
    for server in result.servers:
        live = [e for e in server.entries if not e.disabled and not e.via_gateway]
        if not live:
            continue
        try:
            out[server.name] = spec_for(live[0], server.env, server.headers, os.environ)
        except ValidationError as exc:
            log.warning("discovered server %s skipped: %s", server.name, exc.errors()[0]["msg"])
    return out


def risk_summary(spec: ServerSpec) -> dict[str, Any]:
    """The risk of a configured server, as the gateway's `GET /servers` shows it (no secret values).

    An entry already wrapped by `mcpwall wrap` is scored on the server it wraps.
    """
    command, args = spec.command, tuple(spec.args)
    wrap = detect_wrap(command, args)
    if wrap is not None:
        command, args = wrap.command, wrap.args
    transport = spec.transport or ("stdio" if spec.command else "streamable-http")
    risk = assess(Launch(command=command, args=args, env=spec.env, headers=spec.headers, url=spec.url,
                         transport=transport, home=str(Path.home())))
    return {"score": risk.score, "level": risk.level,
            "flags": [{"rule": f.rule, "severity": f.severity, "owasp": list(f.owasp)} for f in risk.flags]}


__all__ = ["discovered_server_specs", "expand", "risk_summary", "spec_for"]
