"""Collect the tools/list of public MCP servers into tests/trust/public/ (the no-finding corpus).

    python tools/collect_public_tools.py                     # install every server below into /tmp/hc-corpus, list, save
    python tools/collect_public_tools.py --only github time  # just these (keys of SERVERS)
    python tools/collect_public_tools.py --no-install        # list what an earlier run installed

Not run by CI: it installs packages from npm and PyPI. Each server is
installed into a scratch directory (`npm install --prefix`, one uv venv per
PyPI package; never the project's node_modules or .venv), started over stdio
with dummy credentials (no server needs a real key to say what tools it has)
and a scratch HOME, and asked for every page of `tools/list` through the
official Python SDK client. The raw JSON each server sent is saved, one tool a
line, as tests/trust/public/<key>.json with a `source` member (registry:
package@version) and `obtained` ("live"). The definitions are the servers'
own words: nothing here edits them.

Tried and left out (2026-12-03): @modelcontextprotocol/server-redis (connects
to Redis before it answers), @supabase/mcp-server-supabase (asks the
Supabase API at start), @heroku/mcp-server 1.x (its published build imports
an SDK path its pinned SDK lacks), @stripe/mcp (no answer without a real
key), mcp-server-qdrant (downloads an embedding model at start),
mcp-server-docker (needs Python 3.12). tests/trust/test_public_definitions.py
scans them through `mcpwall inspect`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "trust" / "public"
UV = Path(sys.executable).parent / "uv"


@dataclass(frozen=True)
class Server:
    registry: str  # "npm" or "pypi"
    package: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    bin: str = ""  # the command, when the package has several
    pins: tuple[str, ...] = ()  # requirements installed beside it, for a package its own pins no longer start


_AWS = {"AWS_ACCESS_KEY_ID": "AKIDUMMY", "AWS_SECRET_ACCESS_KEY": "dummy", "AWS_REGION": "us-east-1",
        "FASTMCP_LOG_LEVEL": "ERROR"}

#: key (the fixture's file name) -> server
SERVERS: dict[str, Server] = {
    "server-github": Server("npm", "@modelcontextprotocol/server-github", env={"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"}),
    "server-gitlab": Server("npm", "@modelcontextprotocol/server-gitlab",
                            env={"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy", "GITLAB_API_URL": "http://127.0.0.1:9/api/v4"}),
    "server-slack": Server("npm", "@modelcontextprotocol/server-slack",
                           env={"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T00000000"}),
    "server-google-maps": Server("npm", "@modelcontextprotocol/server-google-maps", env={"GOOGLE_MAPS_API_KEY": "dummy"}),
    "server-brave-search": Server("npm", "@modelcontextprotocol/server-brave-search", env={"BRAVE_API_KEY": "dummy"}),
    "server-puppeteer": Server("npm", "@modelcontextprotocol/server-puppeteer"),
    "server-postgres": Server("npm", "@modelcontextprotocol/server-postgres", args=("postgresql://127.0.0.1:9/db",)),
    "server-sequential-thinking": Server("npm", "@modelcontextprotocol/server-sequential-thinking"),
    "server-aws-kb-retrieval": Server("npm", "@modelcontextprotocol/server-aws-kb-retrieval", env=_AWS),
    "server-everart": Server("npm", "@modelcontextprotocol/server-everart", env={"EVERART_API_KEY": "dummy"}),
    "server-filesystem": Server("npm", "@modelcontextprotocol/server-filesystem", args=("{scratch}",)),
    "server-memory": Server("npm", "@modelcontextprotocol/server-memory", env={"MEMORY_FILE_PATH": "{scratch}/m.json"}),
    "server-everything": Server("npm", "@modelcontextprotocol/server-everything", args=("stdio",)),
    "playwright-mcp": Server("npm", "@playwright/mcp"),
    "notion-mcp-server": Server("npm", "@notionhq/notion-mcp-server", env={"NOTION_TOKEN": "ntn_dummy"}),
    "firecrawl-mcp": Server("npm", "firecrawl-mcp", env={"FIRECRAWL_API_KEY": "fc-dummy"}),
    "tavily-mcp": Server("npm", "tavily-mcp", env={"TAVILY_API_KEY": "tvly-dummy"}),
    "exa-mcp-server": Server("npm", "exa-mcp-server", env={"EXA_API_KEY": "dummy"}),
    "context7-mcp": Server("npm", "@upstash/context7-mcp"),
    "mcp-server-kubernetes": Server("npm", "mcp-server-kubernetes"),
    "desktop-commander": Server("npm", "@wonderwhy-er/desktop-commander"),
    "sentry-mcp-server": Server("npm", "@sentry/mcp-server", env={"SENTRY_ACCESS_TOKEN": "dummy"}),
    "browserbase-mcp": Server("npm", "@browserbasehq/mcp-server-browserbase",
                              env={"BROWSERBASE_API_KEY": "dummy", "BROWSERBASE_PROJECT_ID": "dummy"}),
    "mongodb-mcp-server": Server("npm", "mongodb-mcp-server"),
    "circleci-mcp-server": Server("npm", "@circleci/mcp-server-circleci", env={"CIRCLECI_TOKEN": "dummy"}),
    "figma-developer-mcp": Server("npm", "figma-developer-mcp", args=("--stdio",), env={"FIGMA_API_KEY": "dummy"}),
    "chrome-devtools-mcp": Server("npm", "chrome-devtools-mcp"),
    "cyanheads-git-mcp-server": Server("npm", "@cyanheads/git-mcp-server"),
    "mapbox-mcp-server": Server("npm", "@mapbox/mcp-server", env={"MAPBOX_ACCESS_TOKEN": "pk.dummy"}),
    "executeautomation-playwright": Server("npm", "@executeautomation/playwright-mcp-server"),
    "hubspot-mcp-server": Server("npm", "@hubspot/mcp-server", env={"PRIVATE_APP_ACCESS_TOKEN": "dummy"}),
    "mcp-server-fetch": Server("pypi", "mcp-server-fetch"),
    "mcp-server-git": Server("pypi", "mcp-server-git"),
    "mcp-server-sqlite": Server("pypi", "mcp-server-sqlite", args=("--db-path", "{scratch}/db.sqlite"), pins=("mcp<2",)),
    "mcp-server-time": Server("pypi", "mcp-server-time"),
    "mcp-atlassian": Server("pypi", "mcp-atlassian",
                            env={"JIRA_URL": "http://127.0.0.1:9", "JIRA_USERNAME": "u", "JIRA_API_TOKEN": "dummy",
                                 "CONFLUENCE_URL": "http://127.0.0.1:9/wiki", "CONFLUENCE_USERNAME": "u",
                                 "CONFLUENCE_API_TOKEN": "dummy"}),
    "aws-documentation-mcp-server": Server("pypi", "awslabs.aws-documentation-mcp-server", env=_AWS),
    "aws-pricing-mcp-server": Server("pypi", "awslabs.aws-pricing-mcp-server", env=_AWS),
    "iam-mcp-server": Server("pypi", "awslabs.iam-mcp-server", env=_AWS),
    "dynamodb-mcp-server": Server("pypi", "awslabs.dynamodb-mcp-server", env=_AWS),
    "cloudwatch-mcp-server": Server("pypi", "awslabs.cloudwatch-mcp-server", env=_AWS),
    "eks-mcp-server": Server("pypi", "awslabs.eks-mcp-server", env=_AWS),
    "mcp-clickhouse": Server("pypi", "mcp-clickhouse", env={"CLICKHOUSE_HOST": "127.0.0.1", "CLICKHOUSE_PORT": "9",
                                                            "CLICKHOUSE_USER": "u", "CLICKHOUSE_PASSWORD": "dummy"}),
    "mcp-neo4j-cypher": Server("pypi", "mcp-neo4j-cypher", env={"NEO4J_URI": "bolt://127.0.0.1:9"}),
    "mcp-server-motherduck": Server("pypi", "mcp-server-motherduck", args=("--db-path", ":memory:", "--read-write")),
    "duckduckgo-mcp-server": Server("pypi", "duckduckgo-mcp-server"),
    "arxiv-mcp-server": Server("pypi", "arxiv-mcp-server", args=("--storage-path", "{scratch}/papers")),
    "excel-mcp-server": Server("pypi", "excel-mcp-server", args=("stdio",), env={"EXCEL_FILES_PATH": "{scratch}"}),
    "chroma-mcp": Server("pypi", "chroma-mcp", args=("--client-type", "ephemeral"), pins=("pydantic<2.12",)),
    "mcp-obsidian": Server("pypi", "mcp-obsidian", env={"OBSIDIAN_API_KEY": "dummy"}),
    "mcp-server-calculator": Server("pypi", "mcp-server-calculator"),
    "office-word-mcp-server": Server("pypi", "office-word-mcp-server"),
    "mcp-grafana": Server("pypi", "mcp-grafana", env={"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_API_KEY": "dummy"}),
}


def _npm_dir(root: Path, package: str) -> Path:
    return root / "npm" / ("n_" + package.replace("/", "_").replace("@", ""))


def _py_dir(root: Path, package: str) -> Path:
    return root / "py" / package.replace(".", "_")


def install(root: Path, server: Server) -> None:
    """The package into its own scratch directory (scripts not run: no browser or binary downloads)."""
    if server.registry == "npm":
        where = _npm_dir(root, server.package)
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(where), "--no-audit", "--no-fund", "--ignore-scripts",
                        server.package], check=True, capture_output=True, timeout=600)
    else:
        where = _py_dir(root, server.package)
        if not where.exists():
            subprocess.run([str(UV), "venv", "-q", "-p", "3.11", str(where)], check=True, timeout=600)
        subprocess.run([str(UV), "pip", "install", "-q", server.package, *server.pins], check=True, timeout=900,
                       env={**os.environ, "VIRTUAL_ENV": str(where)})


def command(root: Path, server: Server) -> tuple[str, str]:
    """(command to start the server, its version) from what `install` put in the scratch directory."""
    if server.registry == "npm":
        where = _npm_dir(root, server.package) / "node_modules" / server.package
        meta = json.loads((where / "package.json").read_text())
        bins = meta.get("bin") or {}
        if isinstance(bins, str):
            target = bins
        else:
            target = bins[server.bin] if server.bin else next(iter(bins.values()))
        return str((where / target).resolve()), str(meta["version"])
    venv = _py_dir(root, server.package)
    script = ("import importlib.metadata as m, sys; d = m.distribution(sys.argv[1]); "
              "print(d.version); print(' '.join(e.name for e in d.entry_points if e.group == 'console_scripts'))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", script, server.package], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    scripts = out[1].split()
    name = server.bin or min(scripts, key=len)
    return str(venv / "bin" / name), out[0]


async def list_tools(cmd: list[str], env: dict[str, str], timeout: float) -> list[dict[str, Any]]:
    """Every page of the server's tools/list, as the JSON it sent (the SDK's models drop unknown keys)."""
    import anyio
    from mcp import Client, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    from pydantic import TypeAdapter

    raw = TypeAdapter(dict[str, Any])
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
    tools: list[dict[str, Any]] = []
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            with anyio.fail_after(timeout):
                async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                    session: Any = client.session  # asked for raw JSON, which its result types do not name
                    cursor: str | None = None
                    for _ in range(100):
                        page = await session.send_request(
                            types.ListToolsRequest(params=types.PaginatedRequestParams(cursor=cursor)), raw)
                        tools += [t for t in page.get("tools") or [] if isinstance(t, dict)]
                        cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
                        if not cursor:
                            break
        except BaseException as exc:
            while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]
            errlog.seek(0)
            raise RuntimeError(f"{exc.__class__.__name__}: {exc}\n{errlog.read()[-600:]}") from exc
    return tools


def list_tools_plain(cmd: list[str], env: dict[str, str], timeout: float) -> list[dict[str, Any]]:
    """tools/list over plain JSON-RPC lines, for a server whose list the SDK client refuses to
    parse (server-gitlab's input schemas have no `type`): a client passing lists on whole, like
    the gateway, still shows these definitions to a model."""
    import selectors

    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)

    def ask(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        while sel.select(timeout):
            line = proc.stdout.readline()
            if not line:
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("id") == msg_id:
                if "result" not in msg:
                    raise RuntimeError(f"{method}: {msg.get('error')}")
                return dict(msg["result"])
        raise RuntimeError(f"{method}: no answer")

    try:
        ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "collect-public-tools", "version": "1"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        proc.stdin.flush()
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for page_id in range(2, 102):
            page = ask(page_id, "tools/list", {"cursor": cursor} if cursor else {})
            tools += [t for t in page.get("tools") or [] if isinstance(t, dict)]
            cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
            if not cursor:
                break
        return tools
    finally:
        proc.kill()
        proc.wait()


def save(key: str, source: str, tools: list[dict[str, Any]], obtained: str = "live") -> Path:
    """One tool a line: compact, and a change to one definition is a one-line diff."""
    OUT.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join(json.dumps(t, ensure_ascii=False, sort_keys=True) for t in tools)
    path = OUT / f"{key}.json"
    path.write_text(f'{{"source": {json.dumps(source)}, "obtained": {json.dumps(obtained)}, "tools": [\n{lines}\n]}}\n',
                    encoding="utf-8")
    return path


def main() -> int:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("/tmp/hc-corpus"), help="scratch directory")
    parser.add_argument("--only", nargs="*", default=None, help="keys of SERVERS to collect")
    parser.add_argument("--no-install", action="store_true", help="use what an earlier run installed")
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args()
    failed = []
    for key, server in SERVERS.items():
        if args.only is not None and key not in args.only:
            continue
        scratch = args.root / "scratch" / key
        (scratch / "home").mkdir(parents=True, exist_ok=True)
        try:
            if not args.no_install:
                install(args.root, server)
            cmd, version = command(args.root, server)
            env = {"PATH": os.environ["PATH"], "HOME": str(scratch / "home"), "NODE_NO_WARNINGS": "1",
                   **{k: v.replace("{scratch}", str(scratch)) for k, v in server.env.items()}}
            argv = [cmd, *(a.replace("{scratch}", str(scratch)) for a in server.args)]
            if server.registry == "npm":
                argv = ["node", *argv]
            obtained = "live"
            try:
                tools = anyio.run(list_tools, argv, env, args.timeout)
            except RuntimeError as exc:
                if "validation error" not in str(exc):
                    raise
                tools = list_tools_plain(argv, env, args.timeout)
                obtained = "live, plain JSON-RPC (the SDK client refused the list)"
        except Exception as exc:  # a server that will not start is reported and skipped
            failed.append(key)
            print(f"{key}: {exc.__class__.__name__}: {exc}", file=sys.stderr)
            continue
        if not tools:
            failed.append(key)
            print(f"{key}: no tools listed", file=sys.stderr)
            continue
        path = save(key, f"{server.registry}:{server.package}@{version}", tools, obtained)
        print(f"{key}: {len(tools)} tools -> {path.relative_to(OUT.parents[2])}")
    if failed:
        print(f"not collected: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
