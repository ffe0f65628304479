"""Where upstream servers come from: `policy.yaml` `servers:`, `--servers FILE`
(the `mcpServers` JSON of claude_desktop_config.json), and discovery.

In an `mcpServers` file, `type: http` means streamable HTTP (as Claude Code
and VS Code use it); in `policy.yaml`, `transport: http` is mcp-seatbelt's
plain JSON-RPC POST.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcpwall.errors import ConfigError
from mcpwall.policy import ServerSpec
from mcpwall.protocol.naming import valid_server_name

_TYPES = {"http": "streamable-http", "streamable-http": "streamable-http", "streamableHttp": "streamable-http",
          "sse": "sse", "stdio": "stdio"}

log = logging.getLogger("mcpwall")


def spec_from_entry(name: str, entry: Mapping[str, Any], where: str) -> ServerSpec:
    """One `mcpServers` entry (command/cmd, args, env, cwd, url, type/transport, headers, roots, era)."""
    command = entry.get("command", entry.get("cmd"))
    kind = entry.get("type", entry.get("transport"))
    data: dict[str, Any] = {
        "command": command,
        "args": [str(a) for a in entry.get("args") or []],
        "env": {str(k): str(v) for k, v in (entry.get("env") or {}).items()},
        "cwd": entry.get("cwd"),
        "url": entry.get("url") or entry.get("serverUrl"),
        "headers": {str(k): str(v) for k, v in (entry.get("headers") or {}).items()},
    }
    if data["url"]:
        data["transport"] = _TYPES.get(str(kind), "streamable-http") if kind != "stdio" else "streamable-http"
    if isinstance(entry.get("disabled"), bool):
        data["disabled"] = entry["disabled"]
    if "era" in entry:
        data["era"] = entry["era"]  # auto | legacy | modern (ServerSpec checks it)
    if "roots" in entry:
        # What the gateway answers the server's roots/list (never a client's roots: see _server_messages).
        roots = entry["roots"]
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise ConfigError(f"{where}: server {name!r}: 'roots' must be a list of absolute paths or file:// URIs")
        data["roots"] = roots
    try:
        return ServerSpec.model_validate({k: v for k, v in data.items() if v is not None})
    except ValidationError as exc:
        raise ConfigError(f"{where}: server {name!r}: {exc.errors()[0]['msg']}") from exc


def load_servers_file(path: Path) -> dict[str, ServerSpec]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: servers file not found") from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read servers file: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object with 'mcpServers'")
    entries = data.get("mcpServers", data.get("servers", data))
    if not isinstance(entries, dict):
        raise ConfigError(f"{path}: 'mcpServers' must be an object")
    base = Path(path).resolve().parent
    out = {}
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: server {name!r} must be an object")
        spec = spec_from_entry(name, entry, str(path))
        if spec.cwd and not os.path.isabs(spec.cwd):
            spec = spec.model_copy(update={"cwd": str(base / spec.cwd)})
        out[name] = spec
    return out


#: First path segments the gateway serves itself: a server named so has no `POST /{server}` route.
RESERVED_NAMES = frozenset({"mcp", "ui"})


def check_names(servers: Mapping[str, ServerSpec]) -> None:
    for name in servers:
        if not valid_server_name(name):
            raise ConfigError(f"server name {name!r} is not usable: letters, digits, '.', '-' and single '_' "
                              "only (the aggregated endpoint names tools server__tool)")
        if name.lower() in RESERVED_NAMES:
            log.warning("server %r: /%s is the gateway's own route, so its plain route POST /%s is not served; "
                        "reach it through /mcp/%s or /mcp (rename it to use the plain route)", name, name, name, name)


__all__ = ["check_names", "load_servers_file", "spec_from_entry"]
