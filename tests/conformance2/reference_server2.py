"""The conformance reference server, dual-era: what suite 0.2.x asks of a server at both revisions.

Usage: reference_server2.py stdio | reference_server2.py http PORT

It is tests/conformance/reference_server.py (the 0.1.10 scenarios' tools,
resources, prompts, completion and logging, on the official Python SDK's
low-level `Server`), extended for the 2026-07-28 requirement set of
`@modelcontextprotocol/conformance` 0.2.x, as its scenario descriptions spell
out:

- on a 2026-07-28 request every result carries `resultType: complete`, and
  the cacheable ones (`tools/list`, `prompts/list`, `resources/list`,
  `resources/templates/list`, `resources/read`) `ttlMs` and `cacheScope`
  (SEP-2549); an unknown resource is -32602 with the uri in `data` (SEP-2164);
- the multi round-trip tools and prompt of SEP-2322
  (`test_input_required_result_*`, `test_input_required_result_prompt`): at
  2026-07-28 they answer `InputRequiredResult` and complete on the retry that
  carries `inputResponses` (and the echoed, HMAC-sealed `requestState`); at a
  handshake revision they ask the same questions as server-to-client requests,
  as a dual-era server does;
- the diagnostic tools of SEP-2575 (`server-stateless`): `test_missing_capability`
  (-32021 naming `sampling` unless the client declared it),
  `test_streaming_elicitation` and `test_logging_tool`;
- DNS-rebinding protection on HTTP: a Host or Origin other than loopback is refused.

The SDK serves the eras itself (`server/discover`, per-request `_meta`, the
headers, -32022): this server only supplies the handlers' answers.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.conformance import reference_server as legacy

Handler = Callable[[Any, Any], Awaitable[Any]]
CACHEABLE = ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read")
#: The freshness hint the reference server gives its cacheable results (a gateway may shorten it).
TTL_MS = 60_000
_KEY = os.urandom(32)


def modern(ctx: Any) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _client_capabilities(ctx: Any) -> dict[str, Any]:
    if modern(ctx):
        caps = (ctx.meta or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
        return dict(caps) if isinstance(caps, dict) else {}
    params = getattr(ctx.session, "client_params", None)
    caps = getattr(params, "capabilities", None)
    return caps.model_dump(exclude_none=True) if caps is not None else {}


# ---------------------------------------------------------------------- requestState


def seal(state: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(state, sort_keys=True).encode()).decode()
    mac = hmac.new(_KEY, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{mac}"


def unseal(token: str | None) -> dict[str, Any]:
    """The state this server minted, or -32602 for a token it did not mint (or one altered since)."""
    body, _, mac = (token or "").rpartition(".")
    if not body or not hmac.compare_digest(mac, hmac.new(_KEY, body.encode(), hashlib.sha256).hexdigest()):
        raise MCPError(code=-32602, message="requestState failed its integrity check")
    state: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body))
    return state


# ---------------------------------------------------------------------- multi round-trip requests


def _elicit(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {
        "message": message, "requestedSchema": {"type": "object", "properties": {field: {"type": kind}},
                                                "required": [field]}}}


def _sample(text: str, max_tokens: int) -> dict[str, Any]:
    return {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens}}


ROOTS: dict[str, Any] = {"method": "roots/list", "params": {}}
#: Each MRTR tool's rounds: the input requests of each round, and whether the round mints a requestState.
ROUNDS: dict[str, list[tuple[dict[str, dict[str, Any]], bool]]] = {
    "test_input_required_result_elicitation": [({"user_name": _elicit("What is your name?", "name")}, False)],
    "test_input_required_result_sampling": [({"capital_question": _sample("What is the capital of France?", 100)},
                                             False)],
    "test_input_required_result_list_roots": [({"client_roots": ROOTS}, False)],
    "test_input_required_result_request_state": [({"confirm": _elicit("Please confirm", "ok", "boolean")}, True)],
    "test_input_required_result_tampered_state": [({"confirm": _elicit("Please confirm", "ok", "boolean")}, True)],
    "test_input_required_result_multiple_inputs": [({"user_name": _elicit("What is your name?", "name"),
                                                     "greeting": _sample("Generate a greeting", 50),
                                                     "client_roots": ROOTS}, True)],
    "test_input_required_result_multi_round": [
        ({"step1": _elicit("Step 1: What is your name?", "name")}, True),
        ({"step2": _elicit("Step 2: What is your favorite color?", "color")}, True)],
    "test_streaming_elicitation": [({"confirm": _elicit("Please confirm", "ok", "boolean")}, False)],
    "test_input_required_result_prompt": [({"user_context": _elicit("What context should the prompt use?",
                                                                    "context")}, False)],
}
_NEEDS = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
MODERN_TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": f"Multi round-trip request (SEP-2322): {name.removeprefix('test_')}",
     "inputSchema": legacy._schema()}
    for name in [*ROUNDS, "test_input_required_result_capabilities"] if name != "test_input_required_result_prompt"
] + [
    {"name": "test_missing_capability", "description": "Needs the client's sampling capability (SEP-2575)",
     "inputSchema": legacy._schema()},
    {"name": "test_logging_tool", "description": "Logs at info while it runs (SEP-2575)",
     "inputSchema": legacy._schema()},
]
MODERN_PROMPTS: list[dict[str, Any]] = [
    {"name": "test_input_required_result_prompt", "description": "A prompt that asks for its context (SEP-2322)"}]


def _summary(answers: dict[str, Any]) -> str:
    parts = []
    for key, answer in sorted(answers.items()):
        answer = answer if isinstance(answer, dict) else {}
        if "content" in answer and isinstance(answer["content"], dict) and "text" in answer["content"]:
            parts.append(f"{key}={answer['content']['text']}")
        elif "roots" in answer:
            parts.append(f"{key}=" + ",".join(str(r.get("uri")) for r in answer["roots"] if isinstance(r, dict)))
        else:
            parts.append(f"{key}={json.dumps(answer.get('content', answer), sort_keys=True)}")
    return "; ".join(parts)


def _input_required(requests: dict[str, Any], state: dict[str, Any] | None) -> dict[str, Any]:
    return {"resultType": "input_required", "inputRequests": requests,
            **({"requestState": seal(state)} if state is not None else {})}


def mrtr_round(name: str, params: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """A modern request's next InputRequiredResult, or None and every answer gathered when it is complete."""
    rounds = ROUNDS[name]
    fresh: dict[str, Any] = {"round": 0, "answers": {}}
    state = unseal(params.request_state) if params.request_state is not None else fresh
    if state.get("tool") not in (None, name):
        raise MCPError(code=-32602, message="requestState was minted for another request")
    done, answers = int(state["round"]), dict(state["answers"])
    responses = params.input_responses or {}
    if not isinstance(responses, dict):
        raise MCPError(code=-32602, message="inputResponses must be an object")
    requests, stateful = rounds[done]
    missing = {k: v for k, v in requests.items() if k not in responses}
    for key in requests:
        if key in responses:
            answer = responses[key]
            if hasattr(answer, "model_dump"):  # the SDK parses each answer into its result model
                answer = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
            if not isinstance(answer, dict):
                raise MCPError(code=-32602, message=f"inputResponses.{key} must be an object")
            answers[key] = answer
    if missing:
        keep = {"tool": name, "round": done, "answers": answers}
        return _input_required(missing, keep if stateful or params.request_state is not None else None), answers
    if done + 1 < len(rounds):
        following, _ = rounds[done + 1]
        return _input_required(following, {"tool": name, "round": done + 1, "answers": answers}), answers
    return None, answers


async def legacy_round(ctx: Any, name: str) -> dict[str, Any]:
    """At a handshake revision the same questions go to the client as server-to-client requests."""
    answers: dict[str, Any] = {}
    for requests, _ in ROUNDS[name]:
        for key, request in requests.items():
            if request["method"] == "roots/list":
                # on the call's own stream, as its other questions (legacy._ask names the call it is for)
                result: Any = await legacy._ask(ctx, types.ListRootsRequest(), types.ListRootsResult)
            elif request["method"] == "sampling/createMessage":
                result = await legacy._ask(ctx, types.CreateMessageRequest(
                    params=types.CreateMessageRequestParams.model_validate(request["params"])),
                    types.CreateMessageResult)
            else:
                p = request["params"]
                result = await legacy._elicit(ctx, p["message"], p["requestedSchema"])
            answers[key] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return answers


def _done_text(name: str, answers: dict[str, Any]) -> str:
    if name == "test_input_required_result_elicitation":
        content = answers.get("user_name", {}).get("content") or {}
        return f"Hello, {content.get('name', 'unknown')}!"
    prefix = "state-ok: " if name in ("test_input_required_result_request_state",
                                      "test_input_required_result_tampered_state",
                                      "test_input_required_result_multiple_inputs",
                                      "test_input_required_result_multi_round") else ""
    return f"{prefix}{name} completed with {_summary(answers)}"


#: The 0.1.10 tools that ask the client mid-call (`legacy._ask`): at 2026-07-28 they ask the same in an
#: InputRequiredResult, as a dual-era server does, so a handshake-era client reaches them through a gateway
#: that speaks 2026-07-28 to this server (the gateway turns the round into a server-to-client request).
ASKING = frozenset({"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults",
                    "test_elicitation_sep1330_enums"})


class _NeedInput(Exception):
    def __init__(self, key: str, request: Any) -> None:
        super().__init__(key)
        self.key, self.request = key, request


class _Answering:
    """A session whose server-to-client requests are answered from a retry's `inputResponses` (`q0`,
    `q1`, ...), or raise _NeedInput for the first one not answered yet; anything else is the real one's."""

    def __init__(self, session: Any, responses: dict[str, Any]) -> None:
        self._session, self._responses, self._n = session, responses, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def send_request(self, request: Any, result_type: Any, **_: Any) -> Any:
        key, self._n = f"q{self._n}", self._n + 1
        if key not in self._responses:
            raise _NeedInput(key, request)
        answer = self._responses[key]
        return result_type.model_validate(answer.model_dump(by_alias=True) if hasattr(answer, "model_dump")
                                          else answer)


class _Replaying:
    """`ctx` with `_Answering` as its session."""

    def __init__(self, ctx: Any, responses: dict[str, Any]) -> None:
        self._ctx, self.session = ctx, _Answering(ctx.session, responses)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


async def _asking_modern(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
    responses = params.input_responses if isinstance(params.input_responses, dict) else {}
    try:
        return await legacy.call_tool(_Replaying(ctx, responses), params)
    except _NeedInput as need:
        request = need.request.model_dump(mode="json", by_alias=True, exclude_none=True)
        return _input_required({need.key: {"method": request["method"], "params": request.get("params", {})}},
                               None)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
    name = params.name
    if name in ASKING and modern(ctx):
        return await _asking_modern(ctx, params)
    caps = _client_capabilities(ctx)
    if name == "test_missing_capability":
        if "sampling" not in caps:
            raise MCPError(code=-32021, message="this tool needs the client's sampling capability",
                           data={"requiredCapabilities": {"sampling": {}}})
        return legacy._result(legacy._text("the client declared sampling"))
    if name == "test_logging_tool":
        # at 2026-07-28 a log line goes out only at the logLevel the request's _meta names
        if not modern(ctx) or (ctx.meta or {}).get("io.modelcontextprotocol/logLevel") in legacy._LEVELS:
            await legacy._log(ctx, "info", "test_logging_tool ran")
        return legacy._result(legacy._text("logged at info"))
    if name == "test_input_required_result_capabilities":
        wanted = {"user_name": _elicit("What is your name?", "name"),
                  "capital_question": _sample("What is the capital of France?", 100), "client_roots": ROOTS}
        offered = {k: v for k, v in wanted.items() if _NEEDS[v["method"]] in caps}
        if not modern(ctx) or not offered or params.input_responses:
            return legacy._result(legacy._text(f"capabilities: {sorted(caps)}"))
        return _input_required(offered, None)
    if name in ROUNDS:
        if not modern(ctx):
            return legacy._result(legacy._text(_done_text(name, await legacy_round(ctx, name))))
        pending, answers = mrtr_round(name, params)
        return pending or legacy._result(legacy._text(_done_text(name, answers)))
    return await legacy.call_tool(ctx, params)


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> dict[str, Any]:
    name = params.name
    if name != "test_input_required_result_prompt":
        return legacy.get_prompt(name, dict(params.arguments or {}))
    if modern(ctx):
        pending, answers = mrtr_round(name, params)
        if pending is not None:
            return pending
    else:
        answers = await legacy_round(ctx, name)
    text = f"Use this context: {(answers.get('user_context', {}).get('content') or {}).get('context', '')}"
    return {"messages": [{"role": "user", "content": legacy._text(text)}]}


def _finish(method: str, handler: Handler) -> Handler:
    """A 2026-07-28 request's result gets `resultType` and, for a cacheable method, the freshness hint."""

    async def wrapped(ctx: Any, params: Any) -> Any:
        try:
            result = await handler(ctx, params)
        except MCPError as exc:
            if modern(ctx) and exc.error.code == -32002:  # SEP-2164: resource not found is invalid params
                raise MCPError(code=-32602, message=exc.error.message, data=exc.error.data) from exc
            raise
        if not modern(ctx) or not isinstance(result, dict):
            return result
        result = {"resultType": "complete", **result}
        if method in CACHEABLE and result["resultType"] == "complete":
            result = {"ttlMs": TTL_MS, "cacheScope": "public", **result}
        return result

    return wrapped


def build() -> Server[Any]:
    server = legacy.build()

    async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
        return {"tools": [*legacy.TOOLS, *MODERN_TOOLS]}

    async def list_prompts(ctx: Any, params: Any) -> dict[str, Any]:
        return {"prompts": [*legacy.PROMPTS, *MODERN_PROMPTS]}

    server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    server.add_request_handler("prompts/list", types.PaginatedRequestParams, list_prompts)
    server.add_request_handler("prompts/get", types.GetPromptRequestParams, get_prompt)
    for method in ("tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
                   "prompts/list", "prompts/get", "completion/complete"):
        entry = server.get_request_handler(method)
        assert entry is not None
        server.add_request_handler(method, entry.params_type, _finish(method, entry.handler))
    return server


def _serve_http(port: int) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    loopback = ["127.0.0.1", "localhost", "[::1]"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=[f"{h}:{port}" for h in loopback] + loopback,
        allowed_origins=[f"http://{h}:{port}" for h in loopback] + [f"http://{h}" for h in loopback])
    app = build().streamable_http_app(event_store=legacy.MemoryEventStore(), retry_interval=500,
                                      transport_security=security)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main(argv: list[str]) -> None:
    if argv[:1] == ["http"] and len(argv) == 2:
        _serve_http(int(argv[1]))
        return
    if argv != ["stdio"]:
        sys.exit("usage: reference_server2.py stdio | reference_server2.py http PORT")
    asyncio.run(legacy._serve_stdio(build))


if __name__ == "__main__":
    main(sys.argv[1:])
