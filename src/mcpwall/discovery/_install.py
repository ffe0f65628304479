"""`mcpwall init`: route every configured server through mcpwall.

Local (stdio) servers are rewritten to run `mcpwall wrap --name NAME [--home
H] -- CMD ARGS...`, so the client launches mcpwall and mcpwall launches the
server; remote servers are pointed at the gateway's per-server endpoint
`http://127.0.0.1:9420/mcp/NAME` with the client's own named token in its
headers (`_clienttokens.py`: never the gateway's token, which approves and
administers), and their original URL and headers move into policy.yaml's
`servers:` (so the gateway, not every client config, holds upstream
credentials). An entry an earlier init pointed at the gateway with the
gateway's own token gets the client's token instead. A file that holds a
token after the rewrite is written 0600 (owner bits kept); others keep
their mode. Entries already routed through mcpwall are left alone, so
running init twice never wraps twice.

`plan()` decides and renders every change without writing; `apply()` writes
after re-checking each file is unchanged since it was read, backing each one
up first (`_backup.py`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcpwall.discovery._backup import Manifest, sha256, write_atomic
from mcpwall.discovery._formats import ReadProblem, read_text
from mcpwall.discovery._model import ScanResult, ServerEntry
from mcpwall.discovery._rewrite import NotEditable, edit_text
from mcpwall.errors import ConfigError

DEFAULT_GATEWAY = "http://127.0.0.1:9420"
TOKEN_PLACEHOLDER = "<client-token>"

#: The `type` value each client uses for streamable HTTP, where it has one.
_STREAM_TYPE = {"cline": "streamableHttp", "roo-code": "streamable-http", "continue": "streamable-http",
                "goose": "streamable_http"}
_NO_TYPE = frozenset({"gemini-cli", "zed", "codex", "windsurf"})
_REQUIRES_TYPE = frozenset({"vscode", "copilot", "goose", "continue"})


def find_mcpwall() -> str:
    """The mcpwall executable clients should launch (`choose_mcpwall` without its warning)."""
    return choose_mcpwall()[0]


def choose_mcpwall() -> tuple[str, str | None]:
    """The mcpwall executable init writes into client configs, and a warning when it may not last.

    Clients launch that path long after init ran, so an installed one (pipx's or uv's, on PATH)
    is preferred over one in a source checkout's venv, which stops working once the checkout is
    moved or deleted. Only when nothing else is found is such a one written, with a warning
    that names it and says how to install mcpwall properly.
    """
    argv0 = sys.argv[0] if sys.argv else ""
    candidates = [argv0 if os.path.basename(argv0).startswith("mcpwall") else None, shutil.which("mcpwall"),
                  str(Path(sys.executable).parent / ("mcpwall.exe" if os.name == "nt" else "mcpwall"))]
    found = [os.path.abspath(c) for c in candidates if c and os.path.isfile(c)]
    if not found:
        raise ConfigError("cannot find the mcpwall executable; pass --mcpwall PATH")
    running = _short_lived(found[0])
    for path in found:
        if _short_lived(path) is None:
            if running is None or os.path.realpath(path) == os.path.realpath(found[0]):
                return path, None
            return path, f"clients will launch {path}, the installed mcpwall, not {found[0]} ({running[0]})"
    assert running is not None
    where, install = running
    return found[0], (f"clients will launch {found[0]}, which is {where}: moving or deleting it breaks every "
                      f"client. Install mcpwall as a tool ({install}), then run `mcpwall uninstall` and that "
                      "mcpwall's `init` (or pass --mcpwall PATH).")


def _checkout_of(path: str) -> Path | None:
    """The source checkout (a directory with pyproject.toml and src/mcpwall) that holds `path`."""
    for parent in Path(path).resolve().parents:
        if (parent / "pyproject.toml").is_file() and (parent / "src" / "mcpwall" / "__init__.py").is_file():
            return parent
    return None


def _short_lived(exe: str) -> tuple[str, str] | None:
    """Where `exe` lies when it may stop working after init, and how to install instead; None when installed."""
    import mcpwall

    root = _checkout_of(exe)
    if root is None and os.path.realpath(os.path.dirname(exe)) == os.path.realpath(os.path.dirname(sys.executable)):
        root = _checkout_of(mcpwall.__file__)  # this environment runs an editable install of a checkout
    if root is not None:
        return f"in the source checkout {root}", f"`pipx install {root}` or `uv tool install {root}`"
    if any(re.fullmatch(r"archive-v\d+", part) for part in Path(exe).resolve().parts):
        return ("in uv's cache, where `uvx` keeps a tool until the cache is cleaned",
                "`uv tool install` or `pipx install` of the same wheel or directory")
    return None


@dataclass
class Change:
    entry: ServerEntry
    name: str
    kind: str  # wrap | gateway
    new: dict[str, Any]


@dataclass
class FilePlan:
    path: Path
    client: str
    fmt: str
    changes: list[Change] = field(default_factory=list)
    before: bytes = b""
    after: bytes = b""
    error: str = ""
    private: bool = False  # the rewritten file holds a bearer token: written 0600


@dataclass
class Plan:
    """Everything init would change; nothing written yet."""

    home: Path
    files: list[FilePlan]
    skipped: list[tuple[ServerEntry, str]]
    remote: dict[str, dict[str, Any]]
    hosts: list[str]

    @property
    def changes(self) -> list[Change]:
        return [c for f in self.files if not f.error for c in f.changes]


def wrap_args(name: str, home_arg: str | None, command: str, args: tuple[str, ...]) -> list[str]:
    return ["wrap", "--name", name, *(["--home", home_arg] if home_arg else []), "--", command, *args]


def wrapped_entry(raw: Mapping[str, Any], exe: str, argv: list[str]) -> dict[str, Any]:
    new = dict(raw)
    key = "cmd" if "cmd" in raw and "command" not in raw else "command"
    current = raw.get(key)
    if isinstance(current, Mapping):  # Zed's older {"command": {"path", "args", "env"}}
        new[key] = {**current, "path": exe, "args": argv}
    else:
        new[key] = exe
        new["args"] = argv
    return new


def gateway_entry(raw: Mapping[str, Any], client: str, url: str, token: str) -> dict[str, Any]:
    new: dict[str, Any] = {}
    url_keys = ("url", "serverUrl", "httpUrl", "uri")
    for k, v in raw.items():
        if k in url_keys:
            if any(u in new for u in url_keys):
                continue
            new["httpUrl" if client == "gemini-cli" else k] = url
        elif k in ("bearer_token_env_var", "env_http_headers", "oauth"):
            continue  # credentials for the real upstream; the gateway holds those now
        else:
            new[k] = v
    if client not in _NO_TYPE and ("type" in raw or client in _REQUIRES_TYPE):
        new["type"] = _STREAM_TYPE.get(client, "http")
    if isinstance(raw.get("transport"), str):
        new["transport"] = _STREAM_TYPE.get(client, "http")
    auth = {"Authorization": f"Bearer {token}"}
    if client == "codex":
        new["http_headers"] = auth
    elif client == "continue" and isinstance(raw.get("requestOptions"), Mapping):
        new["requestOptions"] = {**raw["requestOptions"], "headers": auth}
    else:
        new["headers"] = auth
    return new


def _upstream(entry: ServerEntry) -> dict[str, Any]:
    spec: dict[str, Any] = {"url": entry.url, "transport": entry.transport}
    if entry.headers:
        spec["headers"] = dict(entry.headers)
    return spec


def _skip_reason(entry: ServerEntry) -> str | None:
    if entry.wrap is not None and entry.wrap.trusted:
        return "already wrapped by mcpwall"
    if entry.wrap is not None:
        return (f"already runs `{entry.command} wrap`, which is not this mcpwall; check that it is genuine "
                "(a look-alike wrapper would see every call)")
    if entry.via_gateway:
        return "already routed through the mcpwall gateway"
    if not entry.editable:
        return "defined in the client's own settings store; add it there by hand"
    if entry.command and not entry.args and " " in entry.command.strip() and not any(c in entry.command for c in "/\\"):
        return "its whole command line is one string; split it into command and args first"
    return None


def _bearer_of(entry: ServerEntry) -> str | None:
    for k, v in entry.headers.items():
        if k.lower() == "authorization" and v[:7].lower() == "bearer ":
            return v[7:].strip()
    return None


def retokened_entry(raw: Mapping[str, Any], token: str) -> dict[str, Any]:
    """An entry already pointing at the gateway, with its Authorization header replaced by `token`."""
    def swap(headers: Mapping[str, Any]) -> dict[str, Any]:
        return {k: (f"Bearer {token}" if k.lower() == "authorization" else v) for k, v in headers.items()}

    new = dict(raw)
    for key in ("headers", "http_headers"):
        if isinstance(raw.get(key), Mapping):
            new[key] = swap(raw[key])
    options = raw.get("requestOptions")
    if isinstance(options, Mapping) and isinstance(options.get("headers"), Mapping):
        new["requestOptions"] = {**options, "headers": swap(options["headers"])}
    return new


def plan(result: ScanResult, home: Path, *, exe: str, gateway: str = DEFAULT_GATEWAY,
         tokens: Mapping[str, str] | None = None, admin_tokens: Sequence[str] = (),
         home_arg: str | None = None, route_remote: bool = True) -> Plan:
    """Every change init would make to every client config, rendered and verified, nothing written.

    `tokens` maps a client to its named token (`_clienttokens.issue`); without
    one the entries show TOKEN_PLACEHOLDER (a plan to show, not to write).
    `admin_tokens` are the gateway's own: an already-routed entry holding one
    is planned to get the client's token instead.
    """
    tokens = tokens or {}
    admin = [t for t in admin_tokens if t]
    names = {id(e): s.name for s in result.servers for e in s.entries}
    files: list[FilePlan] = []
    skipped: list[tuple[ServerEntry, str]] = []
    remote: dict[str, dict[str, Any]] = {}
    hosts: list[str] = []
    for cfg in result.files:
        if cfg.status != "ok" or not cfg.entries:
            continue
        fp = FilePlan(cfg.path, cfg.client, cfg.fmt)
        for entry in cfg.entries:
            if entry.via_gateway and entry.editable and _bearer_of(entry) in admin:
                fp.changes.append(Change(entry, names.get(id(entry), entry.name), "retoken",
                                         retokened_entry(entry.raw, tokens.get(entry.client, TOKEN_PLACEHOLDER))))
                continue
            reason = _skip_reason(entry)
            if reason:
                skipped.append((entry, reason))
                continue
            name = names[id(entry)]
            if entry.url and not route_remote:
                skipped.append((entry, "policy.yaml was not written by init; add this server under `servers:` "
                                       "or use --overwrite-policy"))
            elif entry.url:
                url = f"{gateway.rstrip('/')}/mcp/{name}"
                fp.changes.append(Change(entry, name, "gateway", gateway_entry(
                    entry.raw, entry.client, url, tokens.get(entry.client, TOKEN_PLACEHOLDER))))
                remote.setdefault(name, _upstream(entry))
                host = (urlsplit(entry.url).hostname or "").lower()
                if host and host not in hosts:
                    hosts.append(host)
            elif entry.command:
                argv = wrap_args(name, home_arg, entry.command, entry.args)
                fp.changes.append(Change(entry, name, "wrap", wrapped_entry(entry.raw, exe, argv)))
        if not fp.changes:
            continue
        try:
            read_text(cfg.path)  # the same checks as the scan (binary, empty...)
            fp.before = cfg.path.read_bytes()
            bom = fp.before.startswith(b"\xef\xbb\xbf")
            text = fp.before.decode("utf-8-sig")
            new = edit_text(text, cfg.fmt, [(c.entry.path, c.new) for c in fp.changes])
            fp.after = (b"\xef\xbb\xbf" if bom else b"") + new.encode("utf-8")
            secrets = [*tokens.values(), *admin]
            fp.private = (any(c.kind != "wrap" for c in fp.changes) or any(t in new for t in secrets)
                          or any(e.via_gateway and _bearer_of(e) for e in cfg.entries))
        except (NotEditable, ReadProblem, OSError, UnicodeDecodeError) as exc:
            fp.error = str(exc)
        files.append(fp)
    return Plan(home, files, skipped, remote, hosts)


@dataclass
class Applied:
    """One file's outcome: rewritten, `skipped` (could not be edited in place), or `error` (failed)."""

    path: Path
    client: str
    servers: list[str]
    error: str = ""
    skipped: str = ""


def apply(p: Plan) -> list[Applied]:
    """Write every planned file (backed up first) that has not changed since it was planned."""
    manifest = Manifest.load(p.home)
    out: list[Applied] = []
    for fp in p.files:
        names = [c.name for c in fp.changes]
        if fp.error:
            out.append(Applied(fp.path, fp.client, names, skipped=fp.error))
            continue
        try:
            current = fp.path.read_bytes()
        except OSError as exc:
            out.append(Applied(fp.path, fp.client, names, f"cannot read: {exc.strerror}"))
            continue
        if sha256(current) != sha256(fp.before):
            out.append(Applied(fp.path, fp.client, names, "changed while init was running; run init again"))
            continue
        manifest.record(fp.path, fp.client, fp.before, fp.after, names)
        manifest.save()
        mode = os.stat(fp.path).st_mode & 0o7777
        if fp.private:
            mode &= 0o7700  # a bearer token inside: the user only (the client runs as the user)
        write_atomic(fp.path, fp.after, mode)
        out.append(Applied(fp.path, fp.client, names))
    return out


__all__ = ["DEFAULT_GATEWAY", "TOKEN_PLACEHOLDER", "Applied", "Change", "FilePlan", "Plan", "apply", "choose_mcpwall",
           "find_mcpwall", "gateway_entry", "plan", "retokened_entry", "wrap_args", "wrapped_entry"]
