"""From a parsed config file to `ServerEntry` objects, for every client's format.

Each "shape" knows where a client keeps its servers inside its file
(`mcpServers`, VS Code's `servers` and settings `mcp.servers`, Claude Code's
per-project `projects.*.mcpServers`, Codex `[mcp_servers.NAME]`, Zed
`context_servers`, Goose `extensions`, Continue's `mcpServers` list, JetBrains
XML). One normaliser then reads an entry whatever its spelling: `command` or
`cmd`, `args`, `env`/`envs`, `url`/`serverUrl`/`httpUrl`/`uri`,
`type`/`transport`, `headers`/`http_headers`, `disabled`/`enabled`.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from xml.etree import ElementTree

from mcpwall.discovery import _commands as cmds
from mcpwall.discovery._model import ServerEntry, Transport, WrapInfo

GATEWAY_PORT = 9420
_REMOTE_TYPES: dict[str, Transport] = {
    "http": "streamable-http", "streamable-http": "streamable-http", "streamablehttp": "streamable-http",
    "streamable_http": "streamable-http", "sse": "sse",
}
#: Clients whose plain `url` key means SSE rather than streamable HTTP.
_URL_MEANS_SSE = frozenset({"gemini-cli"})


def _strs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if v is not None and not isinstance(v, dict | list))
    return (str(value),)


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in value.items() if not isinstance(v, dict | list)}


def detect_wrap(command: str | None, args: tuple[str, ...]) -> WrapInfo | None:
    """`mcpwall wrap --name N [--home H] -- CMD ARGS` (as init writes it), or None."""
    if not command:
        return None
    rest = list(args)
    name = cmds.base(command)
    if name.startswith("python") and rest[:2] in (["-m", "mcpwall"], ["-m", "mcpwall.cli"]):
        rest = rest[2:]
    elif name != "mcpwall":
        return None
    if rest[:1] != ["wrap"]:
        return None
    rest = rest[1:]
    opts: dict[str, str] = {}
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "--":
            i += 1
            break
        if word.startswith("-") and i + 1 < len(rest):
            key, eq, val = word.partition("=")
            if eq:
                opts[key] = val
                i += 1
            else:
                opts[word] = rest[i + 1]
                i += 2
            continue
        break
    inner = rest[i:]
    wrap_name = opts.get("--name") or opts.get("-n")
    if not inner or not wrap_name:
        return None
    return WrapInfo(wrap_name, opts.get("--home"), inner[0], tuple(inner[1:]), trusted=is_this_mcpwall(command))


@lru_cache(maxsize=1)
def _this_mcpwall() -> frozenset[str]:
    candidates = [sys.argv[0] if sys.argv and os.path.basename(sys.argv[0]).startswith("mcpwall") else None,
                  shutil.which("mcpwall"), str(Path(sys.executable).parent / "mcpwall"),
                  str(Path(sys.executable).parent / "mcpwall.exe")]
    return frozenset(os.path.realpath(c) for c in candidates if c and os.path.isfile(c))


@lru_cache(maxsize=256)
def is_this_mcpwall(command: str) -> bool:
    """The command runs this installation's mcpwall (or this Python, for `python -m mcpwall`)."""
    path = command if os.path.isabs(command) else shutil.which(command)
    if not path or not os.path.isfile(path):
        return False
    real = os.path.realpath(path)
    if cmds.base(command).startswith("python"):
        return real == os.path.realpath(sys.executable)
    return real in _this_mcpwall()


def is_gateway_url(url: str | None, ports: tuple[int, ...] = (GATEWAY_PORT,)) -> bool:
    """A URL of mcpwall's own per-server endpoint on loopback (what init writes)."""
    if not url:
        return False
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    return (host in ("127.0.0.1", "localhost", "::1") and port in ports
            and bool(re.fullmatch(r"/mcp/[^/]+/?", parts.path)))


def normalise(name: str, raw: Mapping[str, Any], *, client: str, file: Path, scope: str,
              path: tuple[str | int, ...], project: str | None = None, editable: bool = True) -> ServerEntry | None:
    """One raw entry as a ServerEntry, or None when it names no command and no URL."""
    command: Any = raw.get("command", raw.get("cmd"))
    args = _strs(raw.get("args"))
    env = _str_map(raw.get("env", raw.get("envs")))
    if isinstance(command, Mapping):  # Zed's older form: {"command": {"path", "args", "env"}}
        args = _strs(command.get("args"))
        env = _str_map(command.get("env")) or env
        command = command.get("path")
    command = str(command) if isinstance(command, str | int | float) and str(command).strip() else None
    url_value = raw.get("url") or raw.get("serverUrl") or raw.get("httpUrl") or raw.get("uri")
    url = str(url_value) if isinstance(url_value, str) and url_value.strip() else None
    kind = str(raw.get("type", raw.get("transport", "")) or "").lower()
    if isinstance(raw.get("transport"), Mapping):
        kind = ""
    if not command and not url:
        return None
    transport: Transport = "stdio"
    if url and (not command or kind in _REMOTE_TYPES):
        if kind in _REMOTE_TYPES:
            transport = _REMOTE_TYPES[kind]
        elif raw.get("httpUrl"):
            transport = "streamable-http"
        elif client in _URL_MEANS_SSE or (client == "cline" and not kind):
            transport = "sse"
        else:
            transport = "streamable-http"
        command = None
    else:
        url = None
    headers = _str_map(raw.get("headers", raw.get("http_headers")))
    request_options = raw.get("requestOptions")
    if not headers and isinstance(request_options, Mapping):
        headers = _str_map(request_options.get("headers"))
    cwd_value = raw.get("cwd", raw.get("working_directory"))
    disabled = raw.get("disabled") is True or raw.get("enabled") is False
    entry = ServerEntry(name=str(name), client=client, file=file, scope=scope, path=path, command=command,
                        args=args if command else (), env=env, cwd=str(cwd_value) if isinstance(cwd_value, str) else None,
                        url=url, transport=transport, headers=headers, disabled=disabled, editable=editable,
                        project=project, raw=raw)
    if command:
        entry.wrap = detect_wrap(command, args)
    entry.via_gateway = is_gateway_url(url)
    return entry


def _map_entries(servers: Any, prefix: tuple[str | int, ...]) -> Iterator[tuple[str, Mapping[str, Any], tuple[str | int, ...]]]:
    if isinstance(servers, Mapping):
        for name, raw in servers.items():
            if isinstance(raw, Mapping):
                yield str(name), raw, (*prefix, str(name))


def _list_entries(servers: Any, prefix: tuple[str | int, ...]) -> Iterator[tuple[str, Mapping[str, Any], tuple[str | int, ...]]]:
    if isinstance(servers, list):
        for i, raw in enumerate(servers):
            if isinstance(raw, Mapping):
                yield str(raw.get("name") or f"server-{i + 1}"), raw, (*prefix, i)


def _generic(data: Any) -> Iterator[tuple[str, Mapping[str, Any], tuple[str | int, ...]]]:
    if not isinstance(data, Mapping):
        return
    for key in ("mcpServers", "servers", "mcp_servers", "context_servers"):
        if isinstance(data.get(key), Mapping):
            yield from _map_entries(data[key], (key,))
            return
        if isinstance(data.get(key), list):
            yield from _list_entries(data[key], (key,))
            return
    # seatbelt accepts a bare map of servers; only entries that look like servers count
    for name, raw in data.items():
        if isinstance(raw, Mapping) and any(k in raw for k in ("command", "cmd", "url", "serverUrl", "httpUrl")):
            yield str(name), raw, (str(name),)


def raw_entries(shape: str, data: Any) -> Iterator[tuple[str, Mapping[str, Any], tuple[str | int, ...], str | None]]:
    """(name, raw entry, key path, project) for every server a file defines."""
    if not isinstance(data, Mapping):
        return
    if shape == "claude_code":
        for name, raw, path in _map_entries(data.get("mcpServers"), ("mcpServers",)):
            yield name, raw, path, None
        projects = data.get("projects")
        if isinstance(projects, Mapping):
            for project, pdata in projects.items():
                if isinstance(pdata, Mapping):
                    for name, raw, path in _map_entries(pdata.get("mcpServers"), ("projects", str(project), "mcpServers")):
                        yield name, raw, path, str(project)
        return
    if shape == "vscode_settings":
        mcp = data.get("mcp")
        if isinstance(mcp, Mapping):
            for name, raw, path in _map_entries(mcp.get("servers"), ("mcp", "servers")):
                yield name, raw, path, None
        for name, raw, path in _map_entries(data.get("mcp.servers"), ("mcp.servers",)):
            yield name, raw, path, None
        return
    if shape == "codex":
        for name, raw, path in _map_entries(data.get("mcp_servers"), ("mcp_servers",)):
            yield name, raw, path, None
        return
    if shape == "zed":
        for name, raw, path in _map_entries(data.get("context_servers"), ("context_servers",)):
            yield name, raw, path, None
        return
    if shape == "goose":
        for name, raw, path in _map_entries(data.get("extensions"), ("extensions",)):
            if str(raw.get("type", "stdio")).lower() in ("builtin", "platform", "frontend", "inline_python"):
                continue
            yield name, raw, path, None
        return
    if shape == "continue_json":
        exp = data.get("experimental")
        servers = exp.get("modelContextProtocolServers") if isinstance(exp, Mapping) else None
        if isinstance(servers, list):
            for i, raw in enumerate(servers):
                transport = raw.get("transport") if isinstance(raw, Mapping) else None
                if isinstance(transport, Mapping):
                    yield (str(raw.get("name") or f"mcp-{i + 1}"), transport,
                           ("experimental", "modelContextProtocolServers", i, "transport"), None)
        return
    for name, raw, path in _generic(data):  # mcpServers, vscode, continue_yaml, continue_block
        yield name, raw, path, None


# -- JetBrains AI Assistant XML (read only) ----------------------------------------------------

_JB_COMPONENTS = ("McpApplicationServerCommands", "McpProjectServerCommands")


def jetbrains_entries(root: ElementTree.Element) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, entry in mcpServers form) from llm.mcpServers.xml / workspace.xml."""
    candidates: list[ElementTree.Element] = []
    for comp in root.iter("component"):
        if comp.get("name") not in _JB_COMPONENTS:
            continue
        for child in comp:
            candidates.extend(list(child) if child.tag in ("commands", "urls") else [child])
    for element in candidates:
        opts: dict[str, str] = {}
        env: dict[str, str] = {}
        headers: dict[str, str] = {}
        _jb_walk(element, opts, env, headers, None)
        name = opts.get("name")
        entry: dict[str, Any] = {}
        command = opts.get("programPath") or opts.get("command")
        if command:
            entry["command"] = command
            if opts.get("arguments"):
                entry["args"] = opts["arguments"].split()
        url = opts.get("url") or opts.get("serverUrl")
        if url:
            entry["url"] = url
        if not name or not entry:
            continue
        if env:
            entry["env"] = env
        if headers:
            entry["headers"] = headers
        if opts.get("enabled") == "false":
            entry["disabled"] = True
        yield name, entry


def _jb_walk(node: ElementTree.Element, opts: dict[str, str], env: dict[str, str], headers: dict[str, str],
             into: dict[str, str] | None) -> None:
    label = node.get("name", "") if node.tag == "option" else node.tag
    key = node.get("name") or node.get("key")
    value = node.get("value")
    if into is not None:
        if key and value is not None:
            into[key] = value
    elif label in ("envs", "env", "environment"):
        into = env
    elif label == "headers":
        into = headers
    elif node.tag == "option" and key and value is not None:
        opts.setdefault(key, value)
    for child in node:
        _jb_walk(child, opts, env, headers, into)


__all__ = ["GATEWAY_PORT", "detect_wrap", "is_gateway_url", "is_this_mcpwall", "jetbrains_entries", "normalise", "raw_entries"]
