"""OAuth 2.1 on both sides of the gateway (issue 26).

Upstream (the gateway as an OAuth client of remote servers): `TokenStore` keeps the grants
(`_store`), `UpstreamAuth` puts the right principal's token on each upstream request and renews
it (`_auth`); `mcpwall login` runs the flows (`_client`, `_flow`, `_device`: imported by the CLI
only, as they import the MCP SDK).

Downstream (the gateway as a resource server): `ResourceServer` checks identity providers' tokens
for the HTTP frontend when policy.yaml's `auth:` names issuers (`_config`, `_jwks`, `_metadata`,
`_resource`); `register_resource_server()` attaches it to gateways as they are built (`_service`).
"""

from mcpwall.oauth._auth import (
    LoginRequired,
    UpstreamAuth,
    acting_for,
    current_principal,
    login_command,
    register_upstream_auth,
    use_home,
)
from mcpwall.oauth._config import AuthConfig, parse_auth
from mcpwall.oauth._resource import Principal, ResourceServer
from mcpwall.oauth._service import register_resource_server
from mcpwall.oauth._store import (
    OWNER,
    SERVICE,
    Grant,
    TokenStore,
    TokenStoreError,
    authorization_state,
    server_authorization,
)

__all__ = [
    "OWNER",
    "SERVICE",
    "AuthConfig",
    "Grant",
    "LoginRequired",
    "Principal",
    "ResourceServer",
    "TokenStore",
    "TokenStoreError",
    "UpstreamAuth",
    "acting_for",
    "authorization_state",
    "current_principal",
    "login_command",
    "parse_auth",
    "register_resource_server",
    "register_upstream_auth",
    "server_authorization",
    "use_home",
]
