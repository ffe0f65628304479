"""The scan: every location, every file, every server, deduplicated and scored.

One unreadable, binary, empty or malformed file never sinks a scan: it is
recorded with its status and the scan goes on. Servers that launch the same
thing (same command and arguments, or the same URL) are merged into one
`Server` that lists every client and file that uses it. Names are made
unique and valid for the gateway (`server__tool` needs names without `__`).
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcpwall.discovery import _formats, _locations
from mcpwall.discovery._entries import jetbrains_entries, normalise, raw_entries
from mcpwall.discovery._formats import ReadProblem
from mcpwall.discovery._locations import Location, ScanTarget
from mcpwall.discovery._model import ConfigFile, ScanResult, Server, ServerEntry
from mcpwall.discovery._risk import Launch, assess
from mcpwall.discovery._secrets import (
    inner_secrets,
    is_inline_secret,
    looks_like_token,
    redact_url,
    secret_args,
    url_password,
)

#: The gateway's rule for server names (mcpwall.proxy.valid_server_name), kept here so that
#: `check` and `report` do not import the gateway.
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def valid_name(name: str) -> bool:
    return bool(_SERVER_NAME.match(name)) and "__" not in name and not name.endswith("_")


def sanitise_name(name: str) -> str:
    """A gateway-valid name close to `name`: `My Server!` -> `My-Server`."""
    out = re.sub(r"[^A-Za-z0-9_.-]+", "-", name.strip())
    out = re.sub(r"_{2,}", "_", out)
    out = re.sub(r"-{2,}", "-", out)
    out = re.sub(r"^[^A-Za-z0-9]+", "", out)
    out = out.rstrip("_-.") or "server"
    return out[:64].rstrip("_-.") or "server"


def read_file(path: Path, loc: Location) -> ConfigFile:
    """One config file: its entries, or the reason it could not be used."""
    fmt = _formats.fmt_for(path, loc.shape)
    project = str(loc.project) if loc.project else None
    cfg = ConfigFile(client=loc.client, path=path, scope=loc.scope, fmt=fmt, project=project)
    try:
        doc = _formats.read_document(path, fmt)
    except ReadProblem as problem:
        cfg.status = problem.status  # type: ignore[assignment]
        cfg.error = str(problem)
        return cfg
    if fmt == "xml":
        for name, jb_raw in jetbrains_entries(doc.data):
            entry = normalise(name, jb_raw, client=loc.client, file=path, scope=loc.scope, path=(name,),
                              project=project, editable=False)
            if entry is not None:
                cfg.entries.append(entry)
        return cfg
    if loc.shape == "claude_code" and isinstance(doc.data, dict) and isinstance(doc.data.get("projects"), dict):
        cfg.known_projects = [str(p) for p in doc.data["projects"]]
    if not isinstance(doc.data, dict):
        cfg.status = "malformed"
        cfg.error = f"expected a {'table' if fmt == 'toml' else 'mapping'} at the top level"
        return cfg
    for name, raw, key_path, entry_project in raw_entries(loc.shape, doc.data):
        scope = "local" if entry_project else loc.scope
        entry = normalise(name, raw, client=loc.client, file=path, scope=scope, path=key_path,
                          project=entry_project or project)
        if entry is None:
            continue
        entry.line = doc.line_of(key_path)
        cfg.entries.append(entry)
    return cfg


def scan_files(target: ScanTarget) -> list[ConfigFile]:
    files: list[ConfigFile] = []
    seen: set[str] = set()

    def visit(locs: Iterable[Location]) -> None:
        for loc in locs:
            for path in _locations.expand(loc):
                real = os.path.realpath(path)
                if real in seen:
                    continue
                seen.add(real)
                files.append(read_file(path, loc))

    visit(_locations.locations(target))
    known = set(target.projects)
    extra: list[Path] = []
    for f in files:
        for p in f.known_projects:
            try:
                if Path(p).is_absolute() and Path(p).is_dir():
                    extra.append(Path(p))
            except (OSError, ValueError):
                continue
    more = [p for p in dict.fromkeys(extra) if p not in known]
    if more:
        visit(loc for p in more for loc in _locations.project_locations(p))
    return files


def _norm_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        return f"{parts.scheme.lower()}://{(parts.netloc or '').lower()}{parts.path.rstrip('/')}?{parts.query}"
    except ValueError:
        return url


def server_key(e: ServerEntry) -> tuple[Any, ...]:
    if e.via_gateway and e.url:
        return ("gateway", urlsplit(e.url).path.rstrip("/").rsplit("/", 1)[-1])
    if e.url:
        return ("remote", _norm_url(e.url))
    return ("stdio", e.effective_command, e.effective_args, e.cwd or "")


def _preferred_name(e: ServerEntry) -> str:
    if e.wrap is not None:
        return e.wrap.name
    if e.via_gateway and e.url:
        return urlsplit(e.url).path.rstrip("/").rsplit("/", 1)[-1]
    return e.name


def launch_for(server: Server, target: ScanTarget) -> Launch:
    e = server.first
    command, args = e.effective_command, e.effective_args
    if command and not args and " " in command.strip() and not os.path.exists(command):
        try:  # a whole command line in `command`: some launchers run it through a shell
            parts = shlex.split(command)
            command, args = parts[0], tuple(parts[1:])
        except ValueError:
            pass
    # the Authorization header init writes for the gateway is mcpwall's own token, not a finding
    headers = {k: v for x in server.entries if not x.via_gateway for k, v in x.headers.items()}
    return Launch(command=command, args=tuple(args), env=server.env, headers=headers, url=e.url,
                  transport=e.transport, home=str(target.home),
                  local=target.platform == _locations.current_platform(),
                  name=server.name, clients=tuple(server.clients), guarded=server.guarded)


def dedupe(entries: list[ServerEntry], target: ScanTarget) -> list[Server]:
    by_key: dict[tuple[Any, ...], Server] = {}
    used: set[str] = set()
    for e in entries:
        key = server_key(e)
        server = by_key.get(key)
        if server is not None:
            server.entries.append(e)
            continue
        base = sanitise_name(_preferred_name(e))
        name, n = base, 2
        while name.lower() in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name.lower())
        by_key[key] = Server(name=name, key=key, entries=[e])
    servers = list(by_key.values())
    for s in servers:
        s.risk = assess(launch_for(s, target))
    return servers


def scan(target: ScanTarget | None = None) -> ScanResult:
    """Find, read, deduplicate and score every MCP server configured for `target`."""
    target = target or _locations.make_target()
    started = time.perf_counter()
    files = scan_files(target)
    entries = [e for f in files for e in f.entries]
    servers = dedupe(entries, target)
    return ScanResult(home=target.home, platform=target.platform, projects=list(target.projects), files=files,
                      servers=servers, seconds=time.perf_counter() - started)


def secret_values(result: ScanResult) -> list[str]:
    """Every value the scan saw that is, or may be, a secret: what the scrubber masks."""
    out: list[str] = []
    for e in result.entries:
        for mapping in (e.env, e.headers):
            for k, v in mapping.items():
                if is_inline_secret(k, v) or looks_like_token(v):
                    out.append(v)
                    if " " in v.strip():
                        out.append(v.strip().split(None, 1)[1])
        args = list(e.args) + (list(e.wrap.args) if e.wrap else [])
        for i in secret_args(args):
            value = args[i]
            out.append(value)
            if "=" in value:
                out.append(value.split("=", 1)[1])
            out.extend(inner_secrets(value))
        for text in [e.url, *args]:
            if text and "://" in text and redact_url(text) != text:
                out.extend(_url_secrets(text))
    return [v for v in out if v]


def _url_secrets(url: str) -> list[str]:
    from urllib.parse import parse_qsl

    from mcpwall.discovery._secrets import is_secret_name

    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    out = []
    password = url_password(url)
    if password:
        out.append(password)
    out.extend(v for k, v in parse_qsl(parts.query) if is_secret_name(k) or looks_like_token(v))
    return out


__all__ = ["dedupe", "launch_for", "read_file", "sanitise_name", "scan", "scan_files", "secret_values",
           "server_key", "valid_name"]
