"""Every kind of message a server sends a client reaches it masked (issue 22, class 8).

Strategy: a real gateway in front of tests/proxy/servers/chatty.py, a stdio server that puts an
AWS-key-shaped secret in every kind of server-to-client message: each notification (log line,
progress, resource update, the three list_changed, a cancellation's reason, positional params,
an extra top-level member), each server-to-client request (sampling, elicitation, roots), and
the answers to client requests (initialize instructions, the four lists, a result with an extra
member, an upstream error, a method only a single-server session forwards). The client is a raw
JSON-RPC client, so that the test sees every byte the gateway sends, on each frontend: the
aggregated `/mcp` and `/mcp/chatty` over streamable HTTP (the request's SSE stream and the GET
listen stream), `mcpwall proxy --stdio` and `mcpwall wrap`. One case per message type and
frontend asserts the client received that message, and never the secret in clear. The real
@modelcontextprotocol/server-everything sends the resource update of the issue: a subscribed
resource whose URI carries the secret.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import queue
import sqlite3
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.proxy.harness import EVERYTHING, MCPWALL, PERMISSIVE, GatewayProcess, script_server, write_servers

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SECRET = "AKIAQX4BZ7WD3K5N2HPL"
MASK = "[REDACTED-aws-access-key]"
#: SECRET as the `encoded` kind sends it: a credentials file, base64-encoded
ENCODED = base64.b64encode(f"aws_access_key_id = {SECRET}\n".encode()).decode()
CHATTY = script_server("chatty", SECRET)
FRONTENDS = ["mcp", "mcp_server", "stdio", "wrap"]
#: tools/call emit kinds -> the message the client must receive
NOTIFICATIONS = {
    "message": "notifications/message",
    "progress": "notifications/progress",
    "resources/updated": "notifications/resources/updated",
    "resources/list_changed": "notifications/resources/list_changed",
    "tools/list_changed": "notifications/tools/list_changed",
    "prompts/list_changed": "notifications/prompts/list_changed",
    "cancelled": "notifications/cancelled",
    "positional": "notifications/message",
    "extra_member": "notifications/message",
    "sampling": "sampling/createMessage",
    "elicitation": "elicitation/create",
    "custom_request": "x/ask",
    "custom_notification": "notifications/x/said",
    "encoded": "notifications/message",
}
#: requests whose answers come from the server: (method, params, frontends where it is the server's)
ANSWERS: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    "initialize": ("initialize", {}, ("mcp_server", "wrap")),
    "tools/list": ("tools/list", {}, tuple(FRONTENDS)),
    "resources/list": ("resources/list", {}, tuple(FRONTENDS)),
    "resources/templates/list": ("resources/templates/list", {}, tuple(FRONTENDS)),
    "prompts/list": ("prompts/list", {}, tuple(FRONTENDS)),
    "result_extra_member": ("tools/call", {"name": "plain", "arguments": {}}, tuple(FRONTENDS)),
    "upstream_error": ("tools/call", {"name": "fails", "arguments": {}}, tuple(FRONTENDS)),
    "neither_result_nor_error": ("tools/call", {"name": "bare", "arguments": {}}, tuple(FRONTENDS)),
    "resources/read": ("resources/read", {"uri": "note://1"}, tuple(FRONTENDS)),
    "prompts/get": ("prompts/get", {"name": "greet"}, tuple(FRONTENDS)),
    "completion/complete": ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                                    "argument": {"name": "who", "value": "a"}}, tuple(FRONTENDS)),
    "forwarded_method": ("custom/echo", {}, ("mcp_server", "wrap")),
}
INIT_PARAMS = {"protocolVersion": "2025-11-25", "clientInfo": {"name": "raw", "version": "1"},
               "capabilities": {"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": True}}}


class Wire:
    """A raw JSON-RPC client: `send` one message, read everything the gateway sends from `inbox`."""

    def __init__(self) -> None:
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.ids = itertools.count(1)

    async def send(self, msg: dict[str, Any]) -> None:
        raise NotImplementedError

    async def next(self, timeout: float) -> dict[str, Any] | None:
        try:
            return await asyncio.to_thread(self.inbox.get, True, timeout)
        except queue.Empty:
            return None

    async def request(self, method: str, params: dict[str, Any], *, answer: bool = True,
                      seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Send a request; collect what arrives until its answer, answering the server's requests."""
        rid = f"t{next(self.ids)}"
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = await self.next(30.0)
            assert msg is not None, f"no answer to {method}"
            if seen is not None:
                seen.append(msg)
            if msg.get("id") == rid and "method" not in msg:
                return msg
            if "method" in msg and "id" in msg and answer:
                await self.send({"jsonrpc": "2.0", "id": msg["id"], "result": _answer(msg["method"])})

    async def until(self, method: str, seen: list[dict[str, Any]], timeout: float = 8.0) -> None:
        """Collect into `seen` until a message of `method` has arrived (or `timeout`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not any(m.get("method") == method for m in seen):
            left = deadline - loop.time()
            msg = await self.next(max(left, 0.05)) if left > 0 else None
            if msg is None:
                return
            seen.append(msg)

    def drain(self) -> None:
        with contextlib.suppress(queue.Empty):
            while True:
                self.inbox.get_nowait()


def _answer(method: str) -> dict[str, Any]:
    if method == "sampling/createMessage":
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
    if method == "elicitation/create":
        return {"action": "decline"}
    if method == "roots/list":
        return {"roots": [{"uri": "file:///"}]}
    return {}


class StdioWire(Wire):
    """`mcpwall proxy --stdio` or `mcpwall wrap` as a subprocess, read by a thread."""

    def __init__(self, argv: list[str], log: Path) -> None:
        super().__init__()
        self._log = log.open("ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.inbox.put(json.loads(line))

    async def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()


class HttpWire(Wire):
    """Streamable HTTP: each request's answer (JSON or SSE) and the GET listen stream feed `inbox`."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        super().__init__()
        self.http, self.url = http, url
        self.session = ""
        self.tasks: set[asyncio.Task[None]] = set()

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        return headers

    async def open(self) -> None:
        r = await self.http.post(self.url, json={"jsonrpc": "2.0", "id": "init", "method": "initialize",
                                                 "params": INIT_PARAMS}, headers=self._headers())
        assert r.status_code == 200, r.text
        self.session = r.headers["mcp-session-id"]
        self.inbox.put(r.json())
        opened = asyncio.Event()
        self._spawn(self._listen(opened))
        await asyncio.wait_for(opened.wait(), 10)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _listen(self, opened: asyncio.Event) -> None:
        async with self.http.stream("GET", self.url, headers={**self._headers(), "Accept": "text/event-stream"}) as r:
            assert r.status_code == 200
            async for line in r.aiter_lines():
                opened.set()
                if line.startswith("data: "):
                    self.inbox.put(json.loads(line[6:]))

    async def _post(self, msg: dict[str, Any]) -> None:
        async with self.http.stream("POST", self.url, json=msg, headers=self._headers()) as r:
            if r.headers.get("content-type", "").startswith("text/event-stream"):
                async for line in r.aiter_lines():
                    if line.startswith("data: "):
                        self.inbox.put(json.loads(line[6:]))
            elif r.status_code != 202:
                self.inbox.put(json.loads(await r.aread()))

    async def send(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:
            self._spawn(self._post(msg))
        else:
            await self._post(msg)

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        with contextlib.suppress(httpx.HTTPError):
            await self.http.delete(self.url, headers=self._headers())


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    home = tmp_path_factory.mktemp("gw-chatty")
    g = GatewayProcess(home, {"chatty": CHATTY}).start()
    yield g
    g.stop()


@pytest.fixture(scope="module")
def stdio_wires(gw: GatewayProcess) -> Iterator[dict[str, StdioWire]]:
    """One long-lived stdio gateway per stdio frontend, initialized once (its own home)."""
    wires: dict[str, StdioWire] = {}
    for name in ("stdio", "wrap"):
        home = gw.home / name
        home.mkdir()
        (home / "policy.yaml").write_text(PERMISSIVE)
        servers = write_servers(home / "servers.json", {"chatty": CHATTY})
        argv = [MCPWALL, "proxy", "--stdio", "--home", str(home), "--servers", str(servers)] if name == "stdio" \
            else [MCPWALL, "wrap", "--name", "chatty", "--home", str(home), "--", CHATTY["command"], *CHATTY["args"]]
        wires[name] = StdioWire(argv, home / "gateway.log")
    try:
        yield wires
    finally:
        for wire in wires.values():
            wire.close()


@contextlib.asynccontextmanager
async def connect(frontend: str, gw: GatewayProcess, stdio_wires: dict[str, StdioWire]) -> AsyncIterator[Wire]:
    if frontend in ("stdio", "wrap"):
        wire = stdio_wires[frontend]
        wire.drain()
        if not getattr(wire, "opened", False):
            init = await wire.request("initialize", INIT_PARAMS)
            assert "result" in init, init
            await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            wire.opened = True  # type: ignore[attr-defined]
        await wire.request("resources/subscribe", {"uri": "note://1"})
        yield wire
        return
    url = f"{gw.url}/mcp" if frontend == "mcp" else f"{gw.url}/mcp/chatty"
    async with httpx.AsyncClient(headers=gw.headers, timeout=httpx.Timeout(30.0, read=60.0)) as http:
        http_wire = HttpWire(http, url)
        await http_wire.open()
        await http_wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await http_wire.request("resources/subscribe", {"uri": "note://1"})
        try:
            yield http_wire
        finally:
            await http_wire.close()


def tool(frontend: str, name: str) -> str:
    return f"chatty__{name}" if frontend in ("mcp", "stdio") else name


def text(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages)


@pytest.mark.parametrize("kind", list(NOTIFICATIONS))
@pytest.mark.parametrize("frontend", FRONTENDS)
async def test_each_kind_of_server_message_reaches_the_client_masked(
        frontend: str, kind: str, gw: GatewayProcess, stdio_wires: dict[str, StdioWire]) -> None:
    expected = NOTIFICATIONS[kind]
    async with connect(frontend, gw, stdio_wires) as wire:
        seen: list[dict[str, Any]] = []
        params = {"name": tool(frontend, "emit"), "arguments": {"kind": kind}, "_meta": {"progressToken": "p-1"}}
        answer = await wire.request("tools/call", params, answer=kind != "cancelled", seen=seen)
        assert "result" in answer, answer
        await wire.until(expected, seen)
        got = [m for m in seen if m.get("method") == expected]
        assert got, f"{expected} never reached the client: {seen}"
        assert SECRET not in text(seen)
        assert ENCODED not in text(seen)
        if kind.endswith("list_changed"):
            assert all("params" not in m for m in got), got  # the gateway's own notice; the server's words dropped
        elif kind == "cancelled":
            assert MASK in got[0]["params"]["reason"]
        elif kind not in ("extra_member", "encoded"):  # that member is not relayed; the payload is replaced whole
            assert MASK in text(got)
        if kind == "progress":
            assert got[0]["params"]["progressToken"] == "p-1"
        if kind == "extra_member":
            assert all(set(m) <= {"jsonrpc", "method", "params"} for m in got), got


@pytest.mark.parametrize("case", list(ANSWERS))
@pytest.mark.parametrize("frontend", FRONTENDS)
async def test_each_answer_from_a_server_reaches_the_client_masked(
        frontend: str, case: str, gw: GatewayProcess, stdio_wires: dict[str, StdioWire]) -> None:
    method, params, where = ANSWERS[case]
    if frontend not in where:
        pytest.skip(f"{method} is answered by the gateway itself on {frontend}")
    if "name" in params:
        params = {**params, "name": tool(frontend, params["name"])}
    if "ref" in params:
        params = {**params, "ref": {**params["ref"], "name": tool(frontend, params["ref"]["name"])}}
    if method == "initialize":
        params = INIT_PARAMS
    async with connect(frontend, gw, stdio_wires) as wire:
        seen: list[dict[str, Any]] = []
        answer = await wire.request(method, params, seen=seen)
        assert SECRET not in text(seen)
        assert set(answer) <= {"jsonrpc", "id", "result", "error"}, answer
        if case in ("result_extra_member", "neither_result_nor_error"):  # that member is not relayed at all
            assert case == "result_extra_member" or answer["error"]["data"]["reason"] == "invalid answer"
        else:
            assert MASK in json.dumps(answer), answer


@pytest.mark.parametrize("frontend", FRONTENDS)
async def test_a_servers_roots_request_is_answered_by_the_gateway_not_the_calling_client(
        frontend: str, gw: GatewayProcess, stdio_wires: dict[str, StdioWire]) -> None:
    """Issue 22, class 2: the calling client declared roots and would answer file:///; the server
    is asked nothing of it and gets the configured roots (none)."""
    async with connect(frontend, gw, stdio_wires) as wire:
        seen: list[dict[str, Any]] = []
        answer = await wire.request("tools/call", {"name": tool(frontend, "emit"), "arguments": {"kind": "roots"}},
                                    seen=seen)
        assert not [m for m in seen if m.get("method") == "roots/list"], seen
        assert json.loads(answer["result"]["content"][0]["text"]) == {"roots": []}
    home = gw.home / frontend if frontend in stdio_wires else gw.home
    answered = await _ledger_rows(home / "ledger.db", "roots/list")
    assert answered, "no ledger row for the gateway's roots/list answer"
    server, peer, notes = answered[-1]
    assert (server, peer) == ("chatty", "upstream:chatty")
    assert json.loads(notes)["roots"] == []
    assert "during_session" in json.loads(notes)  # the one client with a call in flight


async def _ledger_rows(db: Path, method: str) -> list[tuple[Any, ...]]:
    """The ledger's protocol_events rows of `method` (the writer commits within 50 ms: polled)."""
    for _ in range(50):
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            rows = conn.execute("SELECT server_name, peer, notes FROM protocol_events WHERE method = ?",
                                (method,)).fetchall()
        if rows:
            return rows
        await asyncio.sleep(0.1)
    return []


@pytest.mark.parametrize("frontend", FRONTENDS)
async def test_a_clients_roots_capability_is_not_declared_to_the_server(
        frontend: str, gw: GatewayProcess, stdio_wires: dict[str, StdioWire]) -> None:
    """Issue 22, class 2: the client declared roots, in initialize and (as the stateless revision
    does) in the call's `_meta`; the server, which has no configured roots, is told of none."""
    caps = "io.modelcontextprotocol/clientCapabilities"
    async with connect(frontend, gw, stdio_wires) as wire:
        answer = await wire.request("tools/call", {"name": tool(frontend, "caps"), "arguments": {},
                                                   "_meta": {caps: {"roots": {"listChanged": True}}, "other": 1}})
        declared = json.loads(answer["result"]["content"][0]["text"])
        assert "roots" not in declared["initialize"], declared
        assert "roots" not in declared["meta"][caps], declared
        assert declared["meta"]["other"] == 1


async def test_server_everythings_resource_update_reaches_its_subscriber_masked(tmp_path: Path) -> None:
    """Issue 22, class 8, as found: server-everything's notifications/resources/updated went out as it came."""
    uri = f"demo://resource/dynamic/text/{SECRET}"
    g = GatewayProcess(tmp_path / "home", {"everything": EVERYTHING}).start()
    try:
        async with httpx.AsyncClient(headers=g.headers, timeout=httpx.Timeout(30.0, read=60.0)) as http:
            wire = HttpWire(http, f"{g.url}/mcp/everything")
            await wire.open()
            await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            seen: list[dict[str, Any]] = []
            assert "result" in await wire.request("resources/subscribe", {"uri": uri}, seen=seen)
            started = await wire.request("tools/call", {"name": "toggle-subscriber-updates", "arguments": {}},
                                         seen=seen)
            assert "Started" in json.dumps(started)
            await wire.until("notifications/resources/updated", seen)
            await wire.close()
        updates = [m for m in seen if m.get("method") == "notifications/resources/updated"]
        assert updates, seen
        assert updates[0]["params"]["uri"] == f"demo://resource/dynamic/text/{MASK}"
        assert SECRET not in text(seen)
    finally:
        g.stop()
