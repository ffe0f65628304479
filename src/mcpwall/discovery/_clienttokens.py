"""The named token `init` gives each client it routes through the gateway, and taking it back.

A client config is read by the agent the client runs (it is a file in the
user's home, and the agent has the user's file access), so the bearer token
written into it is the agent's. It must not be the gateway's own token: that
one logs into the dashboard, answers approvals and administers the gateway,
so an agent holding it approves its own held calls. Each client gets a
token of its own instead, `<home>/run/tokens/<client>.token` (mode 0600): a
request bearing it is that client's principal (policy `agents:`, RBAC), may
call the MCP endpoints, and is refused (403) by the dashboard, its API
(approvals, ledger reads), the admin API and the operator's status routes.

A client's token is reused when it exists, so running init again never
multiplies tokens. The tokens init created are recorded in the init
manifest; `uninstall` deletes each once no file it restored still uses it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from mcpwall.discovery._backup import Manifest, sha256
from mcpwall.errors import ConfigError


def identity_for(client: str) -> str:
    """The principal a client's token stands for: the client's name, in the identity alphabet."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", client).strip("-.") or "client"
    return name[:64]


def issue(home: Path, clients: Iterable[str]) -> dict[str, str]:
    """client -> its named token, creating the missing ones (recorded in the manifest for uninstall)."""
    from mcpwall._token import ensure_named_token  # the gateway package, only when tokens are made

    manifest = Manifest.load(home)
    out: dict[str, str] = {}
    for client in sorted(set(clients)):
        identity = identity_for(client)
        token, created = ensure_named_token(home, identity)
        if created:
            manifest.tokens[identity] = {"client": client, "sha256": sha256(token.encode())}
        out[client] = token
    manifest.save()
    return out


def admin_tokens(home: Path) -> list[str]:
    """The gateway's own token(s), where init can see them, without generating one.

    Entries an earlier init pointed at the gateway hold one of these; they are
    given the client's named token instead.
    """
    from mcpwall._token import TOKEN_ENV, read_secret, token_path

    found: list[str] = []
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env:
        found.append(env)
    path = token_path(home)
    if path.exists():
        try:
            found.append(read_secret(path))
        except ConfigError:
            found.append(path.read_text(encoding="utf-8", errors="replace").strip())
    return [t for t in dict.fromkeys(found) if t]


__all__ = ["admin_tokens", "identity_for", "issue"]
