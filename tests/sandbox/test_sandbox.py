"""Sandboxed stdio servers: `servers.NAME.sandbox` runs the server under bubblewrap.

Strategy: unit tests check the bwrap argument list (grants, network, runtime discovery, the
refusal when bubblewrap is missing). Integration tests run a real gateway whose policy allows
every call and puts real servers in sandboxes: the npm filesystem server started with `/` as
its allowed directory (so its own checks allow everything) and a small probe server. What the
sandbox refuses is then refused by the kernel: the second wall. Bypass attempts: paths outside
the grant, `..` and symlinks out of it, the user's home, writing to a read-only grant, and a
TCP connection to a port listening on the host's loopback.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpwall.policy._model import SandboxSpec
from mcpwall.sandbox import SandboxUnavailable, runtime_paths, sandbox_argv
from tests.harness import MemoryClient, build_gateway, started
from tests.sandbox.conftest import needs_bwrap

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
HERE = Path(__file__).resolve().parent
PROBE = HERE / "probe_server.py"

# ---------------------------------------------------------------------------- the argument list


def test_without_network_the_server_gets_its_own_network_namespace() -> None:
    argv = sandbox_argv(SandboxSpec(), "/usr/bin/true", bwrap="/usr/bin/bwrap")
    assert argv[0] == "/usr/bin/bwrap"
    assert "--unshare-all" in argv
    assert "--share-net" not in argv
    assert argv[-1] == "--"
    assert argv[argv.index("--cap-drop"):argv.index("--cap-drop") + 2] == ["--cap-drop", "ALL"]
    assert "--die-with-parent" in argv


def test_network_is_shared_only_when_granted() -> None:
    argv = sandbox_argv(SandboxSpec(network=True), "/usr/bin/true", bwrap="/usr/bin/bwrap")
    assert "--share-net" in argv
    assert "/etc/resolv.conf" in argv


def test_grants_are_bound_read_only_or_read_write_and_home_is_private(tmp_path: Path) -> None:
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    argv = sandbox_argv(SandboxSpec(read=[str(ro)], write=[str(rw)]), "/usr/bin/true", bwrap="/usr/bin/bwrap")
    text = " ".join(argv)
    assert f"--ro-bind {ro} {ro}" in text
    assert f"--bind {rw} {rw}" in text
    assert "--setenv HOME /tmp" in text
    assert str(Path.home()) not in text.replace(str(Path(sys.base_prefix)), "")
    assert "--ro-bind /etc /etc" not in text


def test_a_missing_grant_is_an_error_not_a_silent_skip(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="does not exist"):
        sandbox_argv(SandboxSpec(read=[str(tmp_path / "nope")]), "/usr/bin/true", bwrap="/usr/bin/bwrap")


def test_a_missing_bubblewrap_is_reported_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpwall.sandbox.bwrap_path", lambda: None)
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed") as caught:
        sandbox_argv(SandboxSpec(), "/usr/bin/true", name="fs")
    assert "apt-get install bubblewrap" in str(caught.value)
    assert "servers.fs.sandbox" in str(caught.value)


def test_the_runtime_of_an_npm_server_is_its_node_modules() -> None:
    if not (BIN / "mcp-server-filesystem").exists():
        pytest.skip("npm servers not installed")
    paths = runtime_paths(str(BIN / "mcp-server-filesystem"))
    assert str(ROOT / "node_modules") in paths


def test_the_runtime_of_a_python_program_is_its_virtualenv_its_interpreter_and_its_sources() -> None:
    paths = runtime_paths(sys.executable)
    assert sys.prefix in paths
    assert any(sys.base_prefix.startswith(p) for p in paths) or sys.base_prefix.startswith("/usr")
    assert str(ROOT / "src") in paths  # the editable install of mcpwall


# ---------------------------------------------------------------------------- through the gateway

POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules: []
stages:
  ratelimit: {{requestsPerMinute: 0}}
servers: {servers}
"""


@asynccontextmanager
async def gateway(tmp_path: Path, servers: dict[str, Any]) -> AsyncIterator[Any]:
    built = build_gateway(tmp_path / "home", POLICY.format(servers=json.dumps(servers)))
    async with started(built):
        client = MemoryClient(built.gateway, process_name="sandbox-test")
        await client.initialize(initialized=True)

        async def call(tool: str, arguments: dict[str, Any]) -> str:
            answer = await client.call(tool, arguments)
            if "error" in answer:
                assert answer["error"]["code"] == -32001, answer  # another stage of the gateway refused it
                return "BLOCKED-BY-GATEWAY"
            return "\n".join(c.get("text", "") for c in answer["result"]["content"])

        yield call, built.gateway


def _workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws = tmp_path / "ws"
    (ws / "out").mkdir(parents=True)
    (ws / "notes.txt").write_text("granted content\n")
    secret = tmp_path / "outside.txt"  # a name no gateway stage finds suspicious
    secret.write_text("NOT-FOR-THE-SERVER\n")
    (ws / "escape").symlink_to(secret)
    return ws, ws / "out", secret


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.integration
@pytest.mark.skipif(not (BIN / "mcp-server-filesystem").exists(), reason="npm servers not installed")
@pytest.mark.usefixtures("sandboxing")
async def test_a_sandboxed_filesystem_server_cannot_read_outside_its_grant_although_policy_and_server_allow(
        tmp_path: Path) -> None:
    ws, out, secret = _workspace(tmp_path)
    fs = {"command": str(BIN / "mcp-server-filesystem"), "args": ["/"],
          "sandbox": {"read": [str(ws)], "write": [str(out)]}}
    async with gateway(tmp_path, {"fs": fs}) as (call, gw):
        assert "sandboxed" in gw.servers["fs"].status()["transport"]
        assert await call("fs__read_text_file", {"path": str(ws / "notes.txt")}) == "granted content\n"
        # The gateway lets this one through (policy and server allow it): only the sandbox stops it.
        text = await call("fs__read_text_file", {"path": str(secret)})
        assert text.startswith("ENOENT"), text
        for attempt in (f"{ws}/../outside.txt", str(ws / "escape"), "/etc/shadow", str(Path.home() / ".bashrc"),
                        "/proc/1/environ"):
            text = await call("fs__read_text_file", {"path": attempt})
            assert "NOT-FOR-THE-SERVER" not in text, attempt
            assert "root:" not in text, attempt  # /etc/shadow

        listing = await call("fs__list_directory", {"path": "/"})
        assert "root" not in listing.split()
        assert "home" not in listing
        refused = await call("fs__write_file", {"path": str(ws / "planted.txt"), "content": "x"})
        assert "EROFS" in refused or "read-only" in refused.lower()
        assert not (ws / "planted.txt").exists()
        await call("fs__write_file", {"path": str(out / "result.txt"), "content": "written inside"})
        assert (out / "result.txt").read_text() == "written inside"


@needs_bwrap
@pytest.mark.anyio
@pytest.mark.integration
@pytest.mark.usefixtures("sandboxing")
async def test_a_sandboxed_server_without_network_cannot_connect_even_to_loopback(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    probe = {"command": sys.executable, "args": [str(PROBE)], "sandbox": {"read": [str(HERE)]}}
    open_probe = {**probe, "sandbox": {"read": [str(HERE)], "network": True}}
    try:
        async with gateway(tmp_path, {"probe": probe, "netprobe": open_probe}) as (call, _gw):
            refused = await call("probe__connect", {"host": "127.0.0.1", "port": port})
            assert refused.startswith("error:"), refused
            assert (await call("probe__connect", {"host": "1.1.1.1", "port": 53})).startswith("error:")
            assert await call("netprobe__connect", {"host": "127.0.0.1", "port": port}) == "connected"
            me = json.loads(await call("probe__whoami", {}))
            assert me["home"] == "/tmp"
            assert me["hostname"] == "mcpwall-sandbox"
            assert "home" not in me["root"]
            # /root may exist as the mount point of an interpreter installed under it (pyenv), but
            # nothing else of the user's home is there.
            for private in (Path.home() / ".bashrc", Path.home() / ".profile", Path.home() / ".ssh"):
                assert (await call("probe__read", {"path": str(private)})).startswith(("error:", "BLOCKED")), private
            inside = Path("/tmp") / f"mcpwall-probe-{os.getpid()}-{port}"
            assert await call("probe__write", {"path": str(inside), "text": "private tmp"}) == "written"
            assert not inside.exists()  # the sandbox's /tmp is its own
    finally:
        listener.close()


@pytest.mark.anyio
@pytest.mark.integration
@pytest.mark.usefixtures("sandboxing")
async def test_without_bubblewrap_a_sandboxed_server_is_not_started_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpwall.sandbox.bwrap_path", lambda: None)
    marker = tmp_path / "started"
    probe = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').write('ran')"],
             "sandbox": {"read": [str(HERE)]}}
    async with gateway(tmp_path, {"probe": probe}) as (_call, gw):
        status = gw.servers["probe"].status()
        assert status["state"] in ("failed", "starting", "down")
        assert "bubblewrap is not installed" in str(status["last_error"])
    assert not marker.exists()
    assert os.environ.get("PATH")  # the test did not tamper with the real PATH
