"""OAuth 2.1 on both sides of the gateway (issue 26).

Upstream (the gateway as an OAuth client of remote servers): `TokenStore` keeps the grants
(`_store`), `UpstreamAuth` puts the right principal's token on each upstream request and renews
it (`_auth`); `mcpwall login` runs the flows (`_client`, `_flow`, `_device`: imported by the CLI
only, as they import the MCP SDK).
"""

from mcpwall.oauth._auth import LoginRequired, UpstreamAuth, acting_for, current_principal, login_command
from mcpwall.oauth._store import OWNER, SERVICE, Grant, TokenStore, TokenStoreError, authorization_state

__all__ = [
    "OWNER",
    "SERVICE",
    "Grant",
    "LoginRequired",
    "TokenStore",
    "TokenStoreError",
    "UpstreamAuth",
    "acting_for",
    "authorization_state",
    "current_principal",
    "login_command",
]
