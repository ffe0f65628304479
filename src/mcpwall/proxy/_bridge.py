"""A modern upstream's multi round-trip requests, asked of the calling client as the legacy era asks.

A 2026-07-28 server that needs input during a `tools/call`, `prompts/get` or
`resources/read` answers it with an `InputRequiredResult`: `inputRequests`
(elicitation, sampling, roots) and an opaque `requestState`, and expects the
same request again with `inputResponses` and that state. The gateway resolves
this itself before the answer reaches the pipeline's response side: each input
request becomes the server-to-client request the handshake era sends mid-call,
handed to `Gateway.on_upstream_request` with the call's session and emit, so it
takes the way any server's request takes (`_server_traffic`): only to the
calling session and only if it declared the capability, sampling refused when
`allowSampling` is false, `roots/list` answered from the server's configured
roots whatever a client says, the request DLP-masked on the way out, and the
client's answer through the client-answer hooks (honeytoken tripwire, DLP) into
`UpstreamServer.respond`, which hands it here (`answered`) instead of to the
server. The call is then retried upstream with the collected `inputResponses`
and the server's `requestState`, verbatim, until a final result.

A legacy client thus gets elicitation and sampling on its session as from any
legacy server; a modern client gets them in the form the gateway gives a
modern client any server-to-client request. A refused or unanswered input ends
the call with that error (the spec's client does the same), and one call is at
most `MAX_ROUNDS` rounds and its timeout long, all rounds together.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcpwall.protocol import ErrorCode, Message, RequestId, error
from mcpwall.proxy._requests import Pending, UpstreamError

if TYPE_CHECKING:
    from mcpwall.proxy._upstream import UpstreamServer

#: Rounds of InputRequiredResult one call may take before the gateway gives up on the server.
MAX_ROUNDS = 8
#: The requests an InputRequiredResult may embed (mrtr: ElicitRequest, CreateMessageRequest, ListRootsRequest).
INPUT_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
#: The requests a server may answer with an InputRequiredResult.
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: A state-only round (no inputRequests) waits before the retry, doubling up to the cap (as the SDK's client).
_BACKOFF_S, _BACKOFF_CAP_S = 0.05, 0.25
_ids = itertools.count(1)
#: the server's key of each input request being asked (by the gateway's request id), so a modern
#: client is asked under the server's own keys (`user_name`, ...), as it would be directly
_keys: dict[str, str] = {}


def asked_key(rid: Any) -> str | None:
    """The key the server gave the input request the gateway is asking as `rid`, if it is one."""
    return _keys.get(rid) if isinstance(rid, str) else None


def answered(upstream: UpstreamServer, message: Message) -> bool:
    """Whether `message`, a client's answer on its way to `upstream`, answers one of the gateway's
    bridged input requests (then it is taken here and never sent to the server)."""
    rid = message.get("id")
    future = upstream.inputs.pop(rid, None) if isinstance(rid, str) else None
    if future is None:
        return False
    if not future.done():
        future.set_result(message)
    return True


def _refused(response: Message, code: int, message: str, **data: Any) -> Message:
    return error(response.get("id"), code, message, data or None)


async def resolve_input(upstream: UpstreamServer, method: str, params: dict[str, Any] | None, response: Message,
                        send: Callable[[dict[str, Any] | None, float], Awaitable[Message]], *, timeout: float,
                        session_id: str | None, downstream_id: RequestId | None, emit: Any) -> Message:
    """`response` if it is final; else the final answer after asking the client and retrying with
    `send(params, time_left)`. Raises UpstreamError when the call's time runs out."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    delay = _BACKOFF_S
    for _ in range(MAX_ROUNDS):
        body = response.get("result")
        if not isinstance(body, dict) or body.get("resultType") != "input_required":
            return response
        if method not in MRTR_METHODS:
            return _refused(response, ErrorCode.UPSTREAM_ERROR,
                            f"upstream {upstream.name!r} asked for input on {method}, which cannot take it",
                            server=upstream.name, reason="error")
        requests, state = body.get("inputRequests"), body.get("requestState")
        if (requests is not None and not isinstance(requests, dict)) or (state is not None and not isinstance(state, str)) \
                or (not requests and state is None):
            return _refused(response, ErrorCode.UPSTREAM_ERROR,
                            f"upstream {upstream.name!r} sent a malformed InputRequiredResult",
                            server=upstream.name, reason="error")
        retry = {k: v for k, v in (params or {}).items() if k not in ("inputResponses", "requestState")}
        if requests:
            delay = _BACKOFF_S
            answers = await _ask_all(upstream, requests, deadline, session_id, downstream_id, emit)
            if "error" in answers:
                return {**answers, "id": response.get("id")}
            retry["inputResponses"] = answers["result"]
        else:
            await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
            delay = min(delay * 2, _BACKOFF_CAP_S)
        if state is not None:
            retry["requestState"] = state
        left = deadline - loop.time()
        if left <= 0:
            raise UpstreamError(f"upstream {upstream.name!r} did not finish {method} within {timeout:g} s", "timeout")
        response = await send(retry, left)
    return _refused(response, ErrorCode.UPSTREAM_ERROR,
                    f"upstream {upstream.name!r} kept asking for input after {MAX_ROUNDS} rounds",
                    server=upstream.name, reason="error")


async def _ask_all(upstream: UpstreamServer, requests: dict[str, Any], deadline: float, session_id: str | None,
                   downstream_id: RequestId | None, emit: Any) -> Message:
    """Ask the calling client every input request at once; `{"result": {key: answer}}`, or the
    first refusal as an error message."""
    loop = asyncio.get_running_loop()
    asked: dict[str, tuple[str, asyncio.Future[Message]]] = {}
    call = Pending(loop.create_future(), "input", session_id, downstream_id, emit=emit)
    for key, req in requests.items():
        if not isinstance(req, dict) or req.get("method") not in INPUT_METHODS \
                or not isinstance(req.get("params", {}), dict):
            return error(None, ErrorCode.UPSTREAM_ERROR,
                         f"upstream {upstream.name!r} asked for input the gateway cannot relay: {key!r}",
                         {"server": upstream.name, "reason": "error"})
        rid = f"mcpwall-input-{next(_ids)}"
        future: asyncio.Future[Message] = loop.create_future()
        upstream.inputs[rid] = future
        asked[key] = (rid, future)
        _keys[rid] = str(key)
        msg: Message = {"jsonrpc": "2.0", "id": rid, "method": req["method"]}
        if "params" in req:
            msg["params"] = req["params"]
        upstream.gateway.on_upstream_request(upstream, msg, call)
    try:
        done, _ = await asyncio.wait([f for _, f in asked.values()], timeout=max(0.0, deadline - loop.time()))
        out: dict[str, Any] = {}
        for key, (_, future) in asked.items():
            if future not in done:
                raise UpstreamError(f"the client did not answer {requests[key].get('method')} for upstream "
                                    f"{upstream.name!r} in time", "timeout")
            answer = future.result()
            if "error" in answer or not isinstance(answer.get("result"), dict):
                err = answer.get("error")
                return {"jsonrpc": "2.0", "id": None, "error": err if isinstance(err, dict) else
                        {"code": int(ErrorCode.UPSTREAM_ERROR), "message": "the client's answer is not a result"}}
            out[key] = answer["result"]
        return {"result": out}
    finally:
        for rid, _ in asked.values():
            upstream.inputs.pop(rid, None)
            _keys.pop(rid, None)


__all__ = ["INPUT_METHODS", "MAX_ROUNDS", "MRTR_METHODS", "answered", "asked_key", "resolve_input"]
