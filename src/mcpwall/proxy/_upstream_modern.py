"""Requests to an upstream that speaks the stateless revision (MCP 2026-07-28).

Such a server keeps no session: every request the gateway sends it carries
the envelope in `params._meta` (the protocol version, the capabilities the
gateway can route to some client, the gateway as the client, and a log level,
`debug`, so the server's log lines reach the gateway, which passes each client
those it asked for), and over streamable HTTP the `MCP-Protocol-Version` and
standard `Mcp-*` headers (`transports/streamable_http.py`), with no
`Mcp-Session-Id`. A client's own envelope never reaches the server: the
gateway is the server's client.

What 2026-07-28 removed (`ping`, `logging/setLevel`, `resources/subscribe` and
`unsubscribe`) is answered here for the gateway's legacy clients instead of
being sent: the server would not know it. An `InputRequiredResult` is resolved
by `_bridge` before the answer leaves, so the pipeline and the client see the
final result, and a result loses what only a 2026-07-28 client reads
(`resultType: complete`, the server's identity stamp), which `modern.finish`
gives a modern client again with the gateway's own.

As the server's client the gateway also does what 2026-07-28 asks of one: an
UnsupportedProtocolVersionError that names the version it sent is retried once
(versioning.mdx), and a tool whose `x-mcp-header` designation is invalid is
excluded (server/tools.mdx): not listed to any client, not in the catalog, a
call naming it refused before it reaches the server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import orjson

from mcpwall import __version__
from mcpwall.protocol import ErrorCode, Message, RequestId, error
from mcpwall.protocol.modern import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    ENVELOPE_KEYS,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    REMOVED,
    SERVER_INFO_META_KEY,
)
from mcpwall.proxy._bridge import resolve_input
from mcpwall.proxy._requests import UpstreamError
from mcpwall.proxy._task_shapes import EXTENSION as TASKS_EXTENSION
from mcpwall.proxy._task_shapes import asks_tasks

if TYPE_CHECKING:
    from mcpwall.proxy._upstream import UpstreamServer

log = logging.getLogger("mcpwall.upstream")

#: A `subscriptions/listen` stays open as long as the server is up; this only bounds the pending entry.
LISTEN_TIMEOUT_S = 86_400.0
#: Re-opened at most this many times in a row when it ends at once (a server that cannot keep one).
MAX_RELISTENS = 5
#: The list capabilities a change notification can be asked for, by the filter key that asks.
_LISTS = (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"), ("resourcesListChanged", "resources"))

_ENVELOPE: Final = frozenset(ENVELOPE_KEYS)

#: Who the gateway is to a modern upstream (its `clientInfo`).
GATEWAY_CLIENT = {"name": "mcpwall", "version": __version__}


def _beyond_envelope(meta: dict[str, Any]) -> bool:
    """Whether `_meta` holds a key besides the envelope's (a progress token, trace context). (A loop:
    `not meta.keys() <= _ENVELOPE` compared a keys view with a set in ~2,400 instructions a call.)"""
    for key in meta:  # noqa: SIM110 (compiled, a loop; `any` of a generator builds one)
        if key not in _ENVELOPE:
            return True
    return False


def stamped(params: dict[str, Any] | None, version: str, capabilities: dict[str, Any]) -> dict[str, Any]:
    """`params` with the gateway's envelope in `_meta` (the rest of `_meta`, a progress token
    or trace context, kept; a client's envelope keys replaced)."""
    meta = params.get("_meta") if params else None
    if isinstance(meta, dict) and _beyond_envelope(meta):
        kept = {k: v for k, v in meta.items() if k not in ENVELOPE_KEYS}
        kept[PROTOCOL_VERSION_META_KEY] = version
        kept[CLIENT_INFO_META_KEY] = GATEWAY_CLIENT
        kept[CLIENT_CAPABILITIES_META_KEY] = capabilities
        kept[LOG_LEVEL_META_KEY] = "debug"
    else:  # (most requests: nothing in `_meta` but a client's envelope, or no `_meta`)
        kept = {PROTOCOL_VERSION_META_KEY: version, CLIENT_INFO_META_KEY: GATEWAY_CLIENT,
                CLIENT_CAPABILITIES_META_KEY: capabilities, LOG_LEVEL_META_KEY: "debug"}
    if not params:
        return {"_meta": kept}
    out = dict(params)
    out["_meta"] = kept
    return out


def plain(response: Message) -> Message:
    """A modern server's answer as any client reads it: without `resultType: complete` and the
    server's identity stamp (the gateway answers, and stamps its own for a modern client)."""
    body = response.get("result")
    if not isinstance(body, dict):
        return response
    complete = body.get("resultType") == "complete"
    meta = body.get("_meta")
    stamp = isinstance(meta, dict) and SERVER_INFO_META_KEY in meta
    if not complete and not stamp:
        return response
    out = dict(body)  # (a copy in C and two deletions: cheaper than a comprehension over every key)
    if complete:
        del out["resultType"]
    if stamp:
        if len(meta) == 1:  # type: ignore[arg-type]
            del out["_meta"]
        else:
            out["_meta"] = {k: v for k, v in meta.items() if k != SERVER_INFO_META_KEY}  # type: ignore[union-attr]
    answer = dict(response)
    answer["result"] = out
    return answer


def calling_capabilities(upstream: UpstreamServer, params: dict[str, Any] | None,
                         session_id: str | None) -> dict[str, Any]:
    """The capabilities a request to a modern upstream declares in its `_meta`: what the gateway can
    route (`upstream_capabilities`), narrowed to what the calling client declared (a modern client's
    per-request clientCapabilities, a legacy client's `initialize`), so the server asks a client only
    what it can answer and refuses a tool that needs more (-32021). The gateway's own requests (its
    catalog) declare the gateway's. Roots stay the gateway's rule: declared only for configured roots.

    What the gateway can route follows the policy (`allowSampling`) and the server's spec (roots), and
    a client sends the same capabilities with every request: the last narrowing is remembered per
    upstream for the same policy, spec and client capabilities (compared by value)."""
    meta = params.get("_meta") if params else None
    client = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    if not isinstance(client, dict):
        session = upstream.gateway.sessions.get(session_id or "")
        if session is None or not session.initialized:
            return upstream.gateway.upstream_capabilities(upstream.name)
        client = session.capabilities
    policy = upstream.gateway.policy.current
    memo = upstream.calling_memo
    if memo is not None and memo[0] is policy and memo[1] is upstream.spec and memo[2] == client:
        return memo[3]
    gateway = upstream.gateway.upstream_capabilities(upstream.name)
    # (only whether each of the client's top-level capabilities is declared counts: a shallow copy keeps it)
    caps = {k: v for k, v in gateway.items() if k == "roots" or client.get(k) not in (None, False)}
    upstream.calling_memo = (policy, upstream.spec, dict(client), caps)
    return caps


class Outgoing:
    """A request to a modern upstream as `UpstreamServer.request` sends it (`outgoing`). (A plain
    class: compiled, one is built in C; a NamedTuple's `__new__` is Python, ~1,900 instructions a call.)"""

    __slots__ = ("capabilities", "params", "version")

    def __init__(self, params: dict[str, Any], version: str, capabilities: dict[str, Any]) -> None:
        self.params = params  # stamped
        self.version = version
        self.capabilities = capabilities


def outgoing(upstream: UpstreamServer, method: str, params: dict[str, Any] | None, session_id: str | None,
             downstream_id: RequestId | None) -> Message | Outgoing:
    """What `UpstreamServer.request` sends a modern upstream for `method`: the stamped request, or
    the answer given here instead (a method 2026-07-28 removed; a tool excluded for its headers).

    The request is sent and waited for in `request`'s own coroutine, and its answer read by
    `incoming` (plain functions): every coroutine level between a client's call and the upstream is
    paid again at each suspension, and this path used to add two (bench/instructions.py --upstream sdk)."""
    if method in REMOVED:
        if method in ("resources/subscribe", "resources/unsubscribe") and params:
            upstream.gateway.traffic.listen.follow(upstream, method, params.get("uri"))  # no holder is left out
        return {"jsonrpc": "2.0", "id": downstream_id, "result": {}}
    if upstream.excluded_tools and method == "tools/call" and params \
            and params.get("name") in upstream.excluded_tools:
        return error(downstream_id, ErrorCode.INVALID_PARAMS,
                     f"Unknown tool: {params['name']} (its x-mcp-header designation is invalid)",
                     {"server": upstream.name, "reason": "invalid_x_mcp_header"})
    version = str(upstream.init_result.get("protocolVersion") or "2026-07-28")
    caps = calling_capabilities(upstream, params, session_id)
    if method == "tools/call":
        # (only a server offering extensions can be asked for tasks: most calls skip `asks_tasks`)
        offered = upstream.init_result.get("capabilities")
        if isinstance(offered, dict) and "extensions" in offered and asks_tasks(offered, params):
            caps = {**caps, "extensions": {TASKS_EXTENSION: {}}}  # the gateway maps the server's tasks (_tasks.py)
    return Outgoing(stamped(params, version, caps), version, caps)


def settled(response: Message, version: str) -> bool:
    """Whether `response` is the final answer as it came: not an InputRequiredResult to resolve, not a
    version refusal to retry (`settle` then takes it)."""
    body = response.get("result")
    if body is None:
        return not _retry_version(response, version)
    return not isinstance(body, dict) or body.get("resultType") != "input_required"


async def settle(upstream: UpstreamServer, method: str, params: dict[str, Any] | None, response: Message,
                 sent: Outgoing, *, timeout: float, session_id: str | None, downstream_id: RequestId | None,
                 emit: Any, on_sent: Callable[[int], None] | None) -> Message:
    """The final answer to a request whose first answer was not (`settled`): a version refusal
    retried once (versioning.mdx), input requests resolved through the calling client (`_bridge`)."""

    async def send(out: dict[str, Any] | None, budget: float) -> Message:
        return await upstream.request(method, stamped(out, sent.version, sent.capabilities), timeout=budget,
                                      session_id=session_id, downstream_id=downstream_id, emit=emit,
                                      on_sent=on_sent, raw=True)

    if "error" in response and _retry_version(response, sent.version):
        response = await send(params, timeout)
    response = await resolve_input(upstream, method, params, response, send, timeout=timeout,
                                   session_id=session_id, downstream_id=downstream_id, emit=emit)
    return incoming(upstream, method, response)


def incoming(upstream: UpstreamServer, method: str, response: Message) -> Message:
    """A modern upstream's final answer as the gateway passes it on (`plain`; a tool list without
    the tools it must exclude; `server/discover` as it came, for `_probe` to read the stamp).

    A tools/call result is made plain for a modern client too, though `modern.finish` puts `resultType` and the gateway's identity stamp back: the
    response stages scan every string of a result, and the server's stamp and `resultType`, which no
    client ever receives, were half the strings of an echo (3 of 6): scanning them cost ~30,000
    instructions a call, building the result once more ~2,000."""
    if method == "server/discover":
        return response
    return without_invalid_headers(upstream, plain(response)) if method == "tools/list" else plain(response)


#: (server, tool, reason) already told in the log: a list is fetched again for every client that lists.
_TOLD: set[tuple[str, str, str]] = set()


def without_invalid_headers(upstream: UpstreamServer, response: Message) -> Message:
    """A modern server's tool list without the tools whose `x-mcp-header` designations are invalid
    (empty, not an RFC 9110 token, on a non-primitive or number property, repeated, off the
    `properties` chain): a 2026-07-28 client MUST exclude them (server/tools.mdx), and the gateway is
    the server's client, so they are neither listed to its clients nor in its catalog (a call naming
    one is refused here as an unknown tool, -32602, before it reaches the server)."""
    body = response.get("result")
    if not isinstance(body, dict) or not isinstance(body.get("tools"), list):
        return response
    tools: list[Any] = body["tools"]
    kept = []
    excluded = upstream.excluded_tools
    for tool in tools:
        schema = tool.get("inputSchema") if isinstance(tool, dict) else None
        reason = None
        # A fresh list's schemas are new objects: one C pass over each, not `designates`' cached walk.
        if isinstance(schema, dict) and b'"x-mcp-header"' in orjson.dumps(schema):
            from mcp.shared.inbound import find_invalid_x_mcp_header

            reason = find_invalid_x_mcp_header(schema)
        if reason is None:
            kept.append(tool)
            if excluded and isinstance(tool, dict):
                excluded.discard(str(tool.get("name")))
            continue
        if len(excluded) < 4096:
            excluded.add(str(tool.get("name")))
        told = (upstream.name, str(tool.get("name")), reason)
        if told not in _TOLD:
            if len(_TOLD) > 1024:
                _TOLD.clear()
            _TOLD.add(told)
            log.warning("[%s] tool %r not offered: invalid x-mcp-header (%s)", upstream.name, told[1], reason)
    if len(kept) == len(tools):
        return response
    return {**response, "result": {**body, "tools": kept}}


def _retry_version(response: Message, sent: str) -> bool:
    """An UnsupportedProtocolVersionError whose `supported` names `sent` (the one version the gateway
    speaks per request): a server that refuses a version it lists, as during an upgrade, or the
    conformance suite's first request, answers the retry; one that names no version the gateway
    speaks is answered with its error (the probe then tells the handshake era, if any, to follow)."""
    err = response.get("error")
    if not isinstance(err, dict) or err.get("code") != ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
        return False
    data = err.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    return isinstance(supported, list) and sent in supported


async def listen(upstream: UpstreamServer, generation: int) -> None:
    """Follow a modern server's list changes, as the handshake era's list_changed notifications
    told them: one `subscriptions/listen` for the lists whose `listChanged` it declares, its
    notifications taken by `ServerTraffic` as any server's (the catalog refreshed, the clients
    told). A stream that ends is opened again and the lists fetched anew (what changed
    meanwhile was not told); one the server refuses is not."""
    caps = upstream.capabilities
    wanted = {key: True for key, cap in _LISTS if isinstance(caps.get(cap), dict) and caps[cap].get("listChanged")}
    loop = asyncio.get_running_loop()
    quick = 0
    while wanted and quick < MAX_RELISTENS:
        opened = loop.time()
        try:
            answer = await upstream.request("subscriptions/listen", {"notifications": wanted}, timeout=LISTEN_TIMEOUT_S)
        except UpstreamError as exc:
            answer = {"error": {"message": str(exc)}} if exc.reason in ("stopped", "exited", "unavailable") else {}
        if "error" in answer or generation != upstream._generation or upstream.state != "ready":
            if "error" in answer and generation == upstream._generation and upstream.state == "ready":
                log.info("[%s] subscriptions/listen refused: its list changes are not followed (%s)", upstream.name,
                         answer["error"])
            return
        quick = quick + 1 if loop.time() - opened < 5.0 else 0
        await asyncio.sleep(min(2.0**quick, 30.0))
        upstream.gateway.upstream_restarted(upstream)  # re-fetch: changes while it was closed were not told


__all__ = ["GATEWAY_CLIENT", "Outgoing", "calling_capabilities", "incoming", "listen", "outgoing", "plain", "settle",
           "settled", "stamped", "without_invalid_headers"]
