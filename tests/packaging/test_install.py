"""mcpwall installed like any Python tool: the wheel, with pipx and with uv, used outside the tree (issue 27).

Strategy: build the wheel from the tree once (`pip wheel`, through the build hook of
tools/hatch_build.py), install it with pipx into a fresh PIPX_HOME/PIPX_BIN_DIR and with
`uv tool install` into a fresh tool dir, then drive the installed entry point as a user would:
cwd a temporary folder, PYTHONPATH and the tree's venv off PATH, HOME a throwaway one. The
gateway serves the npm memory server under the default policy the package carries, and its
dashboard serves the packaged pages and assets; `init` writes the installed entry point into a
client config, that entry launches the server through it with the official SDK client, and
`uninstall` restores the file. The tree's own venv, run as `init` from a checkout, writes its
path only with a warning naming the checkout and how to install.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.discovery.homes import USER_PATHS, write
from tests.proxy.harness import MEMORY, GatewayProcess

# The first test also pays for the session's wheel build (mypyc, when the tree has no current build) and installs.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CURSOR = USER_PATHS["cursor"]["linux"]


def _clean_env(home: Path, *path: Path) -> dict[str, str]:
    """The environment of a user who installed mcpwall as a tool: `path` first on PATH, then the
    system's (node included), never the tree's venv; no PYTHONPATH, no mcpwall settings."""
    system = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and Path(d) != VENV_BIN]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MCPWALL_", "PYTHON", "PIPX_", "UV_")) and k != "VIRTUAL_ENV"
    }
    env.update(HOME=str(home), PATH=os.pathsep.join([*map(str, path), *system]), NO_COLOR="1")
    return env


def _run(
    args: list[str | Path], env: dict[str, str], cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@dataclass
class Installed:
    """One installation of the wheel: its entry point, the folder on PATH that holds it, a throwaway HOME."""

    mcpwall: Path
    bin_dir: Path
    work: Path

    def env(self, home: Path) -> dict[str, str]:
        return _clean_env(home, self.bin_dir)

    def run(self, *args: str | Path, home: Path) -> subprocess.CompletedProcess[str]:
        return _run([self.mcpwall, *args], self.env(home), self.work)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built as a user builds it (an isolated build environment), from outside the tree.
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", ROOT, "-w", out],
        {k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        out,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("mcpwall-*.whl")
    return found


@pytest.fixture(scope="session")
def pipx_install(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("pipx")
    env = {
        **_clean_env(Path.home()),
        "PIPX_HOME": str(base / "home"),
        "PIPX_BIN_DIR": str(base / "bin"),
        "PIPX_MAN_DIR": str(base / "man"),
    }
    done = _run([VENV_BIN / "pipx", "install", "--python", sys.executable, wheel], env, base)
    assert done.returncode == 0, done.stdout + done.stderr
    return Installed(base / "bin" / "mcpwall", base / "bin", tmp_path_factory.mktemp("cwd"))


def _uv_env(base: Path, home: Path) -> dict[str, str]:
    """uv's settings for a tool dir under `base`, with the user's cache (where `uvx` keeps what it runs)."""
    return {
        **_clean_env(home),
        "UV_TOOL_DIR": str(base / "tools"),
        "UV_TOOL_BIN_DIR": str(base / "bin"),
        "UV_CACHE_DIR": str(Path.home() / ".cache" / "uv"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_CONFIG": "1",
    }


def test_the_wheel_carries_the_default_policy_the_templates_and_the_dashboard_assets(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in ("default", "minimal-workstation", "strict-production", "pci-compliance"):
        assert f"mcpwall/policy/templates/{template}.yaml" in names
    assert {
        "mcpwall/dashboard/static/app.js",
        "mcpwall/dashboard/static/app.css",
        "mcpwall/dashboard/static/favicon.svg",
    } <= names
    compiled = [n for n in names if n.startswith("mcpwall/_native_build/")]
    if runpy.run_path(str(ROOT / "tools" / "build_native.py"))["can_compile"]():
        # built here with a compiler: the compiled hot path and its stamp, and a wheel for this platform only
        assert "mcpwall/_native_build/sources.json" in compiled
        assert any(n.endswith(".so") for n in compiled)
        assert not wheel.name.endswith("-py3-none-any.whl"), wheel.name
    else:
        assert compiled == []
        assert wheel.name.endswith("-py3-none-any.whl"), wheel.name


def test_the_pipx_install_runs_its_compiled_hot_path_where_the_wheel_has_one(
    pipx_install: Installed, wheel: Path
) -> None:
    if wheel.name.endswith("-py3-none-any.whl"):
        pytest.skip("a pure-Python wheel: nothing compiled to run")
    python = pipx_install.mcpwall.resolve().parent / "python"
    probe = (
        "import mcpwall.policy._evaluate, mcpwall._native as n; "
        "print(n.compiled_modules(), mcpwall.policy._evaluate.__file__)"
    )
    done = _run([python, "-c", probe], pipx_install.env(pipx_install.work), pipx_install.work)
    assert done.returncode == 0, done.stderr
    modules, path = done.stdout.rsplit(" ", 1)
    assert "mcpwall.policy._evaluate" in modules, done.stdout
    assert path.strip().endswith(".so"), done.stdout
    assert str(ROOT) not in done.stdout


def test_help_and_check_from_the_pipx_install(pipx_install: Installed, tmp_path: Path) -> None:
    helped = pipx_install.run("--help", home=tmp_path)
    assert helped.returncode == 0, helped.stderr
    for command in ("check", "init", "uninstall", "proxy", "dashboard"):
        assert re.search(rf"^\s+{command}\b", helped.stdout, re.M), helped.stdout
    write(
        tmp_path,
        CURSOR,
        json.dumps(
            {"mcpServers": {"shell": {"command": "bash", "args": ["-c", "rm -rf /tmp/x"]}, "memory": MEMORY}}
        ),
    )
    checked = pipx_install.run("check", "--json", home=tmp_path)
    report = json.loads(checked.stdout)
    assert {s["name"] for s in report["servers"]} == {"shell", "memory"}, checked.stderr
    assert next(s for s in report["servers"] if s["name"] == "shell")["flags"]


@pytest.mark.anyio
async def test_init_writes_the_installed_entry_point_which_clients_can_launch_and_uninstall_restores(
    pipx_install: Installed, tmp_path: Path
) -> None:
    config = write(
        tmp_path,
        CURSOR,
        json.dumps(
            {
                "mcpServers": {
                    "memory": {**MEMORY, "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}}
                }
            },
            indent=2,
        ),
    )
    before = config.read_bytes()
    done = pipx_install.run("init", "--yes", home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr
    entry = json.loads(config.read_text())["mcpServers"]["memory"]
    # the name pipx put on PATH: it outlives any checkout, and `pipx upgrade` keeps it
    assert entry["command"] == str(pipx_install.bin_dir / "mcpwall")
    assert entry["args"][:3] == ["wrap", "--name", "memory"]
    # launched as Cursor launches it: the client's environment, the user's HOME
    env = {**pipx_install.env(tmp_path), **entry["env"]}
    server = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=env, cwd=pipx_install.work
    )
    async with Client(server) as client:
        assert "read_graph" in {t.name for t in (await client.list_tools()).tools}
    undone = pipx_install.run("uninstall", home=tmp_path)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert config.read_bytes() == before


def test_proxy_serves_health_and_the_dashboard_from_the_pipx_install(
    pipx_install: Installed, tmp_path: Path
) -> None:
    g = GatewayProcess(
        tmp_path / ".mcpwall",
        {"memory": {**MEMORY, "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}}},
    )
    (g.home / "policy.yaml").unlink()  # the default policy the package carries
    g.env = pipx_install.env(tmp_path)
    g.command, g.cwd = str(pipx_install.mcpwall), pipx_install.work
    g.start(timeout=120)
    try:
        health = httpx.get(f"{g.url}/health", headers=g.headers).json()
        assert health["servers"]["memory"]["state"] == "ready"
        assert str(ROOT) not in json.dumps(health["policy"])
        with httpx.Client(base_url=g.url, follow_redirects=True) as browser:
            assert browser.get("/ui/").url.path == "/ui/login"
            page = browser.post("/ui/login", data={"token": g.token})
            assert page.status_code == 200
            assert "/ui/static/app.js" in page.text
            script = browser.get("/ui/static/app.js")
            assert script.status_code == 200
            assert len(script.content) > 1000
    finally:
        g.stop()


def test_uv_tool_install_and_uvx_run_the_wheel(wheel: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _uv_env(tmp_path, home)
    installed = _run([VENV_BIN / "uv", "tool", "install", "--python", sys.executable, wheel], env, tmp_path)
    assert installed.returncode == 0, installed.stderr
    tool = Installed(tmp_path / "bin" / "mcpwall", tmp_path / "bin", tmp_path)
    assert "Usage: mcpwall" in tool.run("--help", home=home).stdout
    write(home, CURSOR, json.dumps({"mcpServers": {"memory": MEMORY}}))
    planned = json.loads(tool.run("init", "--dry-run", "--json", home=home).stdout)
    assert planned["planned"][0]["servers"] == ["memory"]
    # uvx runs the tool installed above when there is one; without it, from uv's cache: init then
    # writes that path only with a warning saying so
    ran = _run(
        [VENV_BIN / "uvx", "--python", sys.executable, "--from", wheel, "mcpwall", "init", "--dry-run"],
        {**env, "UV_TOOL_DIR": str(tmp_path / "no-tools")},
        tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    assert "Warning: clients will launch" in ran.stdout, ran.stdout
    assert "uv's cache" in ran.stdout


def test_init_from_a_source_checkout_warns_and_prefers_an_installed_mcpwall(
    pipx_install: Installed, tmp_path: Path
) -> None:
    tree = str(VENV_BIN / "mcpwall")
    write(tmp_path, CURSOR, json.dumps({"mcpServers": {"memory": MEMORY}}))
    alone = _run([tree, "init", "--dry-run"], _clean_env(tmp_path), pipx_install.work)
    assert alone.returncode == 0, alone.stderr
    text = " ".join(alone.stdout.split())
    assert f"Warning: clients will launch {tree}, which is in the source checkout {ROOT}" in text, text
    assert f"pipx install {ROOT}" in text
    # with an installed mcpwall on PATH, that one is written, and init says so
    config = tmp_path / CURSOR
    both = _run([tree, "init", "--yes"], pipx_install.env(tmp_path), pipx_install.work)
    assert both.returncode == 0, both.stderr
    assert json.loads(config.read_text())["mcpServers"]["memory"]["command"] == str(pipx_install.mcpwall)
    assert f"the installed mcpwall, not {tree}" in " ".join(both.stdout.split())
    assert shutil.which("mcpwall", path=str(pipx_install.bin_dir)) == str(pipx_install.mcpwall)
