"""The gateway commands as users and clients launch them.

Strategy: real subprocesses: `mcpwall wrap` launched the way a client config
launches it (with and without `--`), and the example configuration `make run`
uses, checked for all its servers becoming ready.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.proxy.harness import MCPWALL, MEMORY, PERMISSIVE, ROOT, GatewayProcess

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.mark.parametrize("dashdash", [True, False])
async def test_wrap_guards_a_stdio_server_in_place(tmp_path: Path, dashdash: bool) -> None:
    (tmp_path / "policy.yaml").write_text(PERMISSIVE)
    args = ["wrap", "--name", "memory", "--home", str(tmp_path), *(["--"] if dashdash else []), MEMORY["command"]]
    async with Client(StdioServerParameters(command=MCPWALL, args=args,
                                            env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")})) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert "read_graph" in names  # names unchanged
        result = await c.call_tool("create_entities", {"entities": [{"name": "e", "entityType": "t",
                                                                     "observations": []}]})
        assert not result.is_error
    # the wrapped server got the client's environment: its memory file is where we said
    assert (tmp_path / "m.jsonl").exists()


def test_the_example_configuration_of_make_run_starts_every_server(tmp_path: Path) -> None:
    servers = ROOT / "examples" / "servers.json"
    g = GatewayProcess(tmp_path / "home", {}, PERMISSIVE)
    shutil.copy(servers, g.servers_file)
    # cwd-relative commands in the example resolve against the examples/ folder's parent
    g.servers_file = servers
    g.start(timeout=120)
    try:
        health = httpx.get(f"{g.url}/health", headers=g.headers).json()
        assert {name: s["state"] for name, s in health["servers"].items()} == {
            "everything": "ready", "memory": "ready", "fs": "ready", "time": "ready"}
        assert health["policy"]["path"].endswith("policy.yaml")
    finally:
        g.stop()
    assert MCPWALL


def test_a_gateway_does_not_load_the_mcp_sdk_it_never_uses(tmp_path: Path) -> None:
    """The SDK (~55 MiB of modules) serves `mcpwall mcp` and the built-in servers, not the gateway."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.yaml").write_text(PERMISSIVE)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tests.harness import build_gateway\n"
        f"build_gateway(Path({str(home)!r}), None, auth=True, port=0)\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize(("section", "line", "says"), [
    ("ledger:\n  bogus: 1\n", 3, "ledger: unknown key(s) bogus"),
    ("ledger: {durability: sometimes}\n", 3, "ledger.durability must be"),
    ("dlp:\n  bogus: 1\n", 3, "dlp"),
    ("rbac:\n  bogus: 1\n", 3, "rbac: unknown key(s) bogus"),
    ("stages:\n  ratelimit: {requestsPerMinute: 0}\n  pins:\n    nonsense: 1\n", 5, "stages.pins: unknown key(s)"),
])
def test_a_bad_policy_section_is_refused_naming_its_file_and_line(tmp_path: Path, section: str, line: int,
                                                                  says: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('version: "1"\ndefaultAction: allow\n' + section)
    proc = subprocess.run([MCPWALL, "proxy", "--home", str(tmp_path), "--port", "0"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert f"{policy}:{line}: " in proc.stderr, proc.stderr
    assert says in proc.stderr
