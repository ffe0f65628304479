"""A failing upstream costs its callers little time and never locks itself out.

Strategy: in-process gateways in front of tests/proxy/servers/misbehave.py
(a server that crashes, hangs, never finishes its handshake or exits at
start), driven through gateway sessions; the circuit breaker's clock is
replaced where the 30 s pause matters. Each test is a way a real deployment
got stuck: a half-open probe the policy denied kept the circuit open for
good, one crash with calls in flight counted as several failures, a server
that was not running held every call for 30 s, one that never answered
`initialize` held the whole gateway for 90 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from mcpwall.proxy._breaker import CircuitBreaker
from tests.harness import build_gateway
from tests.proxy.harness import MCPWALL, PERMISSIVE, script_server, write_servers

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
DENY_ACT = PERMISSIVE.replace("rules:\n", "rules:\n  - id: no-act\n    description: act is denied\n"
                                          "    tools: [act]\n    action: deny\n", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(tmp_path: Path, servers: dict[str, dict[str, Any]], policy: str = PERMISSIVE, **options: Any) -> Any:
    return build_gateway(tmp_path, policy, servers, options=options).gateway


async def session(gw: Any, server: str | None = None) -> Any:
    s = gw.open_session("stdio", server)
    assert "result" in await gw.handle_request(s, INIT)
    await gw.handle(s, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return s


def call(rid: int, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args or {}}}


def test_a_half_open_probe_that_never_reaches_the_server_is_given_back() -> None:
    clock = Clock()
    b = CircuitBreaker(clock=clock)
    for _ in range(5):
        b.failure()
    clock.now += 30
    assert b.allow()
    assert b.probing
    assert not b.allow()
    b.release()  # refused by a later stage: no verdict on the server
    assert b.state == "half-open"
    assert b.allow()  # the next request probes
    clock.now += 400  # and a probe lost without any word is presumed lost after the longest timeout
    assert b.allow()


async def test_a_probe_denied_by_the_policy_does_not_keep_the_circuit_open(tmp_path: Path) -> None:
    gw = make(tmp_path, {"m": script_server("misbehave", "ok")}, DENY_ACT)
    await gw.start()
    try:
        clock = Clock()
        gw.servers["m"].breaker = CircuitBreaker(clock=clock)
        for _ in range(5):
            gw.servers["m"].breaker.failure()
        s = await session(gw, "m")
        assert (await gw.handle_request(s, call(1, "echo")))["error"]["code"] == -32002
        clock.now += 31
        denied = await gw.handle_request(s, call(2, "act"))  # takes the probe, then the policy refuses it
        assert denied["error"]["code"] == -32001
        answer = await gw.handle_request(s, call(3, "echo", {"n": 3}))
        assert "result" in answer, answer  # before: -32002 until the gateway restarted
        assert gw.servers["m"].breaker.state == "closed"
    finally:
        await gw.stop()


async def test_one_crash_with_calls_in_flight_counts_once(tmp_path: Path) -> None:
    gw = make(tmp_path, {"c": script_server("misbehave", "crash")})
    await gw.start()
    try:
        s = await session(gw, "c")
        waiting = [asyncio.ensure_future(gw.handle_request(s, call(10 + i, "tell", {"seconds": 30})))
                   for i in range(4)]
        await asyncio.sleep(0.3)
        crashed = await gw.handle_request(s, call(2, "act"))
        answers = await asyncio.gather(*waiting)
        assert crashed["error"]["data"]["reason"] == "exited"
        assert all(a["error"]["data"]["reason"] == "exited" for a in answers)
        breaker = gw.servers["c"].breaker
        assert (breaker.failures, breaker.state) == (1, "closed")
        assert await gw.servers["c"].wait_ready(10)
        assert "result" in await gw.handle_request(s, call(3, "echo"))  # restarted, and not refused
    finally:
        await gw.stop()


async def test_a_server_that_is_not_running_fails_calls_within_the_policy_timeout(tmp_path: Path) -> None:
    policy = PERMISSIVE + "defaultTimeoutMs: 1500\n"
    gw = make(tmp_path, {"dead": script_server("misbehave", "dead"), "ok": script_server("misbehave", "ok")}, policy)
    await gw.start()
    try:
        s = await session(gw)
        loop = asyncio.get_running_loop()
        took, reasons = [], []
        for i in range(7):
            started = loop.time()
            answer = await gw.handle_request(s, call(i, "dead__echo"))
            took.append(loop.time() - started)
            reasons.append(answer["error"]["data"].get("reason") or answer["error"]["code"])
        assert max(took) < 5, took  # the policy's 1.5 s, not a fixed 30 s
        assert reasons[0] == "unavailable"
        assert reasons[-1] == -32002 or reasons[-1] == "unavailable"
        assert gw.servers["dead"].breaker.failures >= 5  # so its circuit opens and callers fail fast
        assert "result" in await gw.handle_request(s, call(99, "ok__echo"))
    finally:
        await gw.stop()


async def test_a_client_of_one_dead_server_hears_why_at_initialize_not_after_every_retry(tmp_path: Path) -> None:
    gw = make(tmp_path, {"dead": script_server("misbehave", "dead")})
    await gw.start()
    try:
        s = gw.open_session("stdio", "dead")
        started = asyncio.get_running_loop().time()
        answer = await gw.handle_request(s, INIT)
        assert asyncio.get_running_loop().time() - started < 5
        assert answer["error"]["code"] == -32000
        assert "exited" in answer["error"]["message"]
    finally:
        await gw.stop()


async def test_a_server_that_never_finishes_its_handshake_does_not_hold_the_others(tmp_path: Path) -> None:
    gw = make(tmp_path, {"mute": script_server("misbehave", "mute"), "ok": script_server("misbehave", "ok")},
              startup_wait_s=1.0)
    started = time.monotonic()
    await gw.start()
    try:
        assert time.monotonic() - started < 10  # not the 90 s handshake timeout
        s = await session(gw)
        assert "result" in await gw.handle_request(s, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert "result" in await gw.handle_request(s, call(2, "ok__echo"))
        assert gw.servers["mute"].state == "starting"
    finally:
        await gw.stop()


def test_closing_stdin_with_calls_in_flight_exits_promptly_and_records_every_call(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(PERMISSIVE + "defaultTimeoutMs: 120000\n")
    servers = write_servers(tmp_path / "servers.json", {"h": script_server("misbehave", "hang")})
    proc = subprocess.Popen([str(MCPWALL), "proxy", "--stdio", "--home", str(tmp_path), "--servers", str(servers)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(INIT) + "\n").encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0
        for i in range(6):
            proc.stdin.write((json.dumps(call(i + 1, "h__act")) + "\n").encode())
        proc.stdin.write((json.dumps(call(7, "h__echo")) + "\n").encode())
        proc.stdin.flush()
        time.sleep(1.0)
        started = time.monotonic()
        proc.stdin.close()
        rc = proc.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert rc == 0
    assert took < 4, took  # the official SDK's client kills a server 4 s after closing its stdin
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        rows = db.execute("SELECT request_id, outcome FROM tool_calls ORDER BY seq").fetchall()
    assert sorted(int(r) for r, _ in rows) == [1, 2, 3, 4, 5, 6, 7]
    assert {o for r, o in rows if r != "7"} == {"cancelled"}


def test_children_a_server_leaves_behind_go_with_it(tmp_path: Path) -> None:
    import os
    import shlex
    import sys

    pidfile = tmp_path / "child.pid"
    script = tmp_path / "serve.sh"
    server = shlex.join([sys.executable, str(Path(__file__).parent / "servers" / "misbehave.py"), "ok"])
    script.write_text(f"sleep 4242 & echo $! > {shlex.quote(str(pidfile))}\nexec {server}\n")
    (tmp_path / "policy.yaml").write_text(PERMISSIVE)
    servers = write_servers(tmp_path / "servers.json", {"m": {"command": "/bin/sh", "args": [str(script)]}})
    proc = subprocess.Popen([str(MCPWALL), "proxy", "--stdio", "--home", str(tmp_path), "--servers", str(servers)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(INIT) + "\n").encode() + (json.dumps(call(1, "m__echo")) + "\n").encode())
        proc.stdin.flush()
        proc.stdout.readline()
        assert "result" in json.loads(proc.stdout.readline())
        child = int(pidfile.read_text())
        os.kill(child, 0)  # alive while the server runs
        proc.stdin.close()  # the gateway stops; the server exits at once on its stdin's end
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(child, 9)
    pytest.fail("the server's child outlived it")


def test_stdin_and_stdout_may_be_regular_files(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(PERMISSIVE)
    servers = write_servers(tmp_path / "servers.json", {"m": script_server("misbehave", "ok")})
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(INIT) + "\n" + json.dumps(call(1, "m__tell", {"n": 1, "seconds": 2})) + "\n")
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        rc = subprocess.run([str(MCPWALL), "proxy", "--stdio", "--home", str(tmp_path), "--servers", str(servers)],
                            stdin=stdin, stdout=stdout, stderr=subprocess.DEVNULL, timeout=60).returncode
    assert rc == 0  # it aborted (134) with nothing written
    lines = [m for m in map(json.loads, answers.read_text().splitlines()) if "id" in m]
    assert [m["id"] for m in lines] == [0, 1]
    assert lines[1]["result"]["content"][0]["text"] == "told"  # a script's calls are answered in full


async def test_a_servers_instructions_and_templates_are_screened_for_orders_to_the_agent(tmp_path: Path) -> None:
    gw = make(tmp_path, {"p": script_server("misbehave", "poisoned"), "ok": script_server("misbehave", "ok")})
    await gw.start()
    try:
        s = gw.open_session("stdio", "p")
        init = await gw.handle_request(s, INIT)
        assert "instructions" not in init["result"]  # clients paste these into the model's context
        assert init["result"]["serverInfo"]["name"] == "misbehave-poisoned"
        await gw.handle(s, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = await gw.handle_request(s, {"jsonrpc": "2.0", "id": 1, "method": "resources/templates/list"})
        assert [t["name"] for t in listed["result"]["resourceTemplates"]] == ["note"]
        clean = gw.open_session("stdio", "ok")
        assert "result" in await gw.handle_request(clean, INIT)
    finally:
        await gw.stop()


def test_an_oversized_call_on_stdio_is_answered_under_its_id_and_recorded(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(PERMISSIVE)
    servers = write_servers(tmp_path / "servers.json", {"m": script_server("misbehave", "ok")})
    big = {"jsonrpc": "2.0", "id": 70, "method": "tools/call",
           "params": {"name": "m__echo", "arguments": {"blob": "x" * (4 * 1024 * 1024 + 10)}}}
    lines = json.dumps(INIT) + "\n" + json.dumps(big) + "\n" + json.dumps(call(71, "m__echo")) + "\n"
    done = subprocess.run([str(MCPWALL), "proxy", "--stdio", "--home", str(tmp_path), "--servers", str(servers)],
                          input=lines.encode(), capture_output=True, timeout=60)
    answers = {m["id"]: m for m in map(json.loads, done.stdout.decode().splitlines()) if "id" in m}
    assert answers[70]["error"]["code"] == -32600
    assert "result" in answers[71]
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        rows = dict(db.execute("SELECT request_id, outcome FROM tool_calls").fetchall())
    assert rows == {"70": "rejected", "71": "ok"}


async def test_a_server_flooding_its_stderr_does_not_flood_the_gateways_log(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from mcpwall.transports._lines import log_lines

    reader = asyncio.StreamReader()
    reader.feed_data(b"".join(f"noise {i} {'x' * 5000}\n".encode() for i in range(1000)))
    reader.feed_eof()
    with caplog.at_level(logging.INFO, logger="test.stderr"):
        await log_lines(reader, logging.getLogger("test.stderr"), "loud")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 201  # 200 lines, then how many were left out
    assert lines[0].startswith("[loud] noise 0 ")
    assert len(lines[0]) < 2100
    assert lines[-1] == "[loud] 800 more stderr lines not logged"


def test_stdin_or_stdout_on_dev_null_ends_cleanly(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(PERMISSIVE)
    servers = write_servers(tmp_path / "servers.json", {"m": script_server("misbehave", "ok")})
    command = [str(MCPWALL), "proxy", "--stdio", "--home", str(tmp_path), "--servers", str(servers)]
    with open(os.devnull, "rb") as empty:
        assert subprocess.run(command, stdin=empty, capture_output=True, timeout=60).returncode == 0  # was 134
    with open(os.devnull, "wb") as sink:
        done = subprocess.run(command, input=(json.dumps(INIT) + "\n").encode(), stdout=sink,
                              stderr=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 0


def test_a_port_in_use_is_a_failure_exit_1(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (tmp_path / "policy.yaml").write_text(PERMISSIVE)
        servers = write_servers(tmp_path / "servers.json", {})
        done = subprocess.run([str(MCPWALL), "proxy", "--home", str(tmp_path), "--servers", str(servers),
                               "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr  # uvicorn's own 3 is not one of SPEC 2's codes
    assert f"port {port} is already in use" in done.stderr
    assert "--port" in done.stderr


def test_wrapping_a_command_that_cannot_start_answers_why_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(PERMISSIVE)
    done = subprocess.run([str(MCPWALL), "wrap", "--home", str(tmp_path), "--name", "x", "--", "/nonexistent/cmd"],
                          input=(json.dumps(INIT) + "\n").encode(), capture_output=True, timeout=60)
    assert done.returncode == 1  # SPEC 2: a failure; it was 0
    answer = json.loads(done.stdout.decode().splitlines()[0])
    assert answer["error"]["code"] == -32000
    assert "/nonexistent/cmd" in answer["error"]["message"]
