"""Multi round-trip requests (MCP 2026-07-28) as the gateway words them: the sealed state.

A server that needs input in the middle of a `tools/call`, `prompts/get` or
`resources/read` answers it with an `InputRequiredResult` (`resultType:
"input_required"`) carrying `inputRequests` (keyed elicitation, sampling or
roots requests) and an opaque `requestState`; the client asks its user or model,
then retries the same request with `inputResponses` (the answers, by key) and
the `requestState` echoed. The client must not read the state, and the
specification makes a server treat it as attacker-controlled input: bound to
the principal it was given to, to a short expiry and to the request it belongs
to (mrtr.mdx, "Server Requirements").

The gateway's state is `payload.mac`: the payload (base64url JSON) names the
hold, its round, its expiry, a digest of the call (method, name or URI, and
arguments as the client sent them) and a tag of the principal; the MAC is
HMAC-SHA256 under the gateway's key over the payload. `unseal` checks the MAC
first (nothing of an edited state is believed), then the principal, the expiry
and the call, and says which failed in an `InvalidState` whose `to_message` is
the answer: invalid params (-32602) with `data.reason: invalid_request_state`,
the code and reason the Python SDK's servers use, and a message that says
what to do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any, NamedTuple

import orjson

from mcpwall.protocol import ErrorCode, Message, ProtocolError, RequestId

#: The requests whose results may be an InputRequiredResult (mrtr.mdx, "Supported Requests").
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: The input requests a server may embed, and the client capability each needs.
CAPABILITY_OF = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
#: `data.reason` of every refused requestState (mcp.server.request_state's frozen reason)
REASON = "invalid_request_state"
_VERSION = 1
_PRINCIPAL_LABEL = b"mcpwall/mrtr/principal:"

__all__ = [
    "CAPABILITY_OF",
    "INPUT_REQUIRED_METHODS",
    "REASON",
    "Claims",
    "InvalidState",
    "call_body",
    "call_digest",
    "declares",
    "digest_of",
    "input_required",
    "retry_parts",
    "seal",
    "unseal",
]


class Claims(NamedTuple):
    """What a sealed state says: which hold, which round of it, until when, for which call."""

    hold: str
    round: int
    expires_ms: int
    digest: str


class InvalidState(ProtocolError):
    """A retry's `requestState` (or `inputResponses`) the gateway does not accept."""

    def __init__(self, message: str, rid: RequestId | None, detail: str) -> None:
        super().__init__(ErrorCode.INVALID_PARAMS, message, rid, {"reason": REASON, "detail": detail})
        self.detail = detail


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _principal_tag(key: bytes, principal: str) -> str:
    return _b64(hmac.new(key, _PRINCIPAL_LABEL + principal.encode("utf-8", "surrogatepass"),
                         hashlib.sha256).digest()[:12])


def call_body(method: str, params: dict[str, Any]) -> bytes:
    """What identifies a call across its rounds: its method, the name (or URI) and the arguments
    as the client sent them, as canonical JSON (`call_digest` hashes it)."""
    target = params.get("uri") if method == "resources/read" else params.get("name")
    args = params.get("arguments") if method != "resources/read" else None
    return orjson.dumps([method, target, args if args is not None else {}], option=orjson.OPT_SORT_KEYS)


def digest_of(body: bytes) -> str:
    return _b64(hashlib.sha256(body).digest()[:18])


def call_digest(method: str, params: dict[str, Any]) -> str:
    """The digest of `call_body`. A retry must repeat the call exactly."""
    return digest_of(call_body(method, params))


def seal(key: bytes, claims: Claims, principal: str) -> str:
    """The `requestState` of one round: the claims and the principal's tag, MACed."""
    payload = _b64(orjson.dumps({"v": _VERSION, "h": claims.hold, "r": claims.round, "e": claims.expires_ms,
                                 "d": claims.digest, "p": _principal_tag(key, principal)}))
    mac = _b64(hmac.new(key, payload.encode("ascii"), hashlib.sha256).digest())
    return f"{payload}.{mac}"


def unseal(key: bytes, token: Any, principal: str, now_ms: int, rid: RequestId | None) -> Claims:
    """The claims of a state this gateway sealed for `principal`, unexpired; raises InvalidState."""
    if not isinstance(token, str) or token.count(".") != 1 or len(token) > 2048:
        raise InvalidState("Invalid requestState: it is not one this gateway issued; echo the "
                           "requestState of the last InputRequiredResult unchanged", rid, "malformed")
    payload, mac = token.split(".")
    expected = _b64(hmac.new(key, payload.encode("ascii", "replace"), hashlib.sha256).digest())
    if not hmac.compare_digest(mac.encode("ascii", "replace"), expected.encode("ascii")):
        raise InvalidState("Invalid requestState: it was not issued by this gateway or was altered; echo "
                           "the requestState of the last InputRequiredResult unchanged", rid, "signature")
    try:
        body = orjson.loads(_unb64(payload))
        claims = Claims(str(body["h"]), int(body["r"]), int(body["e"]), str(body["d"]))
        tag = str(body["p"])
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise InvalidState("Invalid requestState: unreadable", rid, "malformed") from None
    if not hmac.compare_digest(tag, _principal_tag(key, principal)):
        raise InvalidState("Invalid requestState: it was issued to another principal; only the client "
                           "that received it may retry with it", rid, "principal")
    if now_ms >= claims.expires_ms:
        raise InvalidState("Expired requestState: the gateway waited too long for this retry and gave the "
                           "call up; call the tool again", rid, "expired")
    return claims


def declares(params: Any, capability: str) -> bool:
    """Whether a modern request's `_meta` declares the client `capability` (its per-request
    clientCapabilities: what the gateway may ask of it in an input round)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    caps = meta.get("io.modelcontextprotocol/clientCapabilities") if isinstance(meta, dict) else None
    return isinstance(caps, dict) and caps.get(capability) not in (None, False)


def retry_parts(params: dict[str, Any]) -> tuple[dict[str, Any], Any, Any]:
    """A request's params without the MRTR members, and those members (inputResponses, requestState)."""
    rest = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
    return rest, params.get("inputResponses"), params.get("requestState")


def input_required(rid: RequestId, requests: dict[str, Message], state: str) -> Message:
    """The InputRequiredResult answer: the input requests by key, and the sealed state."""
    return {"jsonrpc": "2.0", "id": rid,
            "result": {"resultType": "input_required", "inputRequests": requests, "requestState": state}}
