"""Discovery speed: scan and report a home with 200 servers across 10 clients.

Generates a fake home (Linux layout) where ten clients (Claude Desktop,
Claude Code, Cursor, VS Code, Windsurf, Cline, Codex, Gemini CLI, Zed, Goose)
each configure 20 servers in their own format - a mix of npx/uvx packages,
interpreters, docker, remote URLs and inline secrets, so every risk rule has
work - then times, over several runs:

- `scan`: finding and parsing every file, deduplicating, scoring;
- `report json|markdown|sarif`: rendering (with the secret scrubber) from the scan.

The goal is under one second for scan + report (issue 6); this prints the
figures and asserts nothing.

    python bench/discovery_scan.py [--runs 20] [--servers-per-client 20]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpwall.discovery import (
    make_target,
    render_json,
    render_markdown,
    render_sarif,
    report_data,
    scan,
    scrubber_for,
)


def _server(i: int) -> dict[str, Any]:
    kind = i % 8
    if kind == 0:
        return {"command": "npx", "args": ["-y", f"@acme/server-{i}"], "env": {"ACME_TOKEN": f"tok_{i:08d}abcdefghij"}}
    if kind == 1:
        return {"command": "uvx", "args": [f"mcp-server-{i}=={i}.0.0"]}
    if kind == 2:
        return {"command": "python3", "args": ["-m", f"srv{i}", "--root", "/home/user/projects"]}
    if kind == 3:
        return {"command": "docker", "args": ["run", "-i", "--rm", "-v", f"/srv/{i}:/data", f"mcp/img{i}"]}
    if kind == 4:
        return {"url": f"https://mcp{i}.example.com/mcp", "headers": {"Authorization": f"Bearer secret{i:04d}xyzxyz"}}
    if kind == 5:
        return {"command": "node", "args": [f"/opt/mcp/{i}/index.js", "--api-key", f"k-{i:06d}-zzzzzzzz"]}
    if kind == 6:
        return {"command": "bash", "args": ["-c", f"exec mcp-{i}"]}
    return {"command": f"/usr/local/bin/mcp-{i}", "args": ["--port", str(9000 + i)]}


def build(home: Path, per_client: int) -> int:
    def servers(client: int) -> dict[str, Any]:
        return {f"{client}-srv-{j}": _server(client * per_client + j) for j in range(per_client)}

    def put(rel: str, text: str) -> None:
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    put(".config/Claude/claude_desktop_config.json", json.dumps({"mcpServers": servers(0)}, indent=2))
    put(".claude.json", json.dumps({"numStartups": 3, "mcpServers": servers(1),
                                    "projects": {f"/nonexistent/p{i}": {"history": ["x"] * 50} for i in range(50)}}))
    put(".cursor/mcp.json", json.dumps({"mcpServers": servers(2)}, indent=2))
    put(".config/Code/User/mcp.json", "// vscode\n" + json.dumps({"servers": servers(3)}, indent=2))
    put(".codeium/windsurf/mcp_config.json", json.dumps({"mcpServers": servers(4)}, indent=2))
    put(".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        json.dumps({"mcpServers": servers(5)}, indent=2))
    codex = []
    for name, s in servers(6).items():
        codex.append(f"[mcp_servers.{json.dumps(name)}]")
        codex += [f"{k} = {json.dumps(v)}" for k, v in s.items() if not isinstance(v, dict)]
        codex += [f"{k} = {{ " + ", ".join(f"{json.dumps(a)} = {json.dumps(b)}" for a, b in v.items()) + " }"
                  for k, v in s.items() if isinstance(v, dict)]
        codex.append("")
    put(".codex/config.toml", "\n".join(codex))
    put(".gemini/settings.json", json.dumps({"mcpServers": servers(7)}, indent=2))
    put(".config/zed/settings.json", "// zed\n" + json.dumps({"context_servers": servers(8)}, indent=2))
    goose = {}
    for name, s in servers(9).items():
        entry: dict[str, Any] = {"name": name, "enabled": True, "timeout": 300}
        if "url" in s:
            entry.update(type="streamable_http", uri=s["url"], headers=s.get("headers", {}))
        else:
            entry.update(type="stdio", cmd=s["command"], args=s.get("args", []), envs=s.get("env", {}))
        goose[name] = entry
    put(".config/goose/config.yaml", "extensions:\n" + "".join(
        f"  {json.dumps(n)}: {json.dumps(e)}\n" for n, e in goose.items()))
    return 10 * per_client


def timed(fn: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    samples, value = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        value = fn()
        samples.append(time.perf_counter() - t0)
    return samples, value


def ms(samples: list[float]) -> str:
    s = sorted(samples)
    return (f"median {statistics.median(s) * 1000:7.1f} ms   p90 {s[int(0.9 * (len(s) - 1))] * 1000:7.1f} ms   "
            f"min {s[0] * 1000:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--servers-per-client", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        total = build(home, args.servers_per_client)
        target = make_target(home, "linux")
        print(f"discovery scan bench: {total} servers across 10 clients, {args.runs} runs, "
              f"Python {platform.python_version()} on {platform.machine()}")
        scan_s, result = timed(lambda: scan(target), args.runs)
        print(f"  scan                     {ms(scan_s)}   ({len(result.servers)} servers, "
              f"{sum(len(s.risk.flags) for s in result.servers)} flags, {len(result.files)} files)")
        data_s, data = timed(lambda: report_data(result), args.runs)
        scrub_s, scrub = timed(lambda: scrubber_for(result), args.runs)
        print(f"  report data + scrubber   {ms([a + b for a, b in zip(data_s, scrub_s, strict=True)])}")
        totals = []
        for name, render in (("json", render_json), ("markdown", render_markdown), ("sarif", render_sarif)):
            render_s, text = timed(lambda r=render: r(data, scrub), args.runs)  # type: ignore[misc]
            end_to_end = [a + b + c + d for a, b, c, d in zip(scan_s, data_s, scrub_s, render_s, strict=True)]
            totals.append(statistics.median(end_to_end))
            print(f"  render {name:<9}         {ms(render_s)}   ({len(text) // 1024} KiB)")
            print(f"  scan + report {name:<9}  {ms(end_to_end)}")
        verdict = "under" if max(totals) < 1.0 else "OVER"
        print(f"  goal: scan + report under 1 s -> {verdict} (worst median {max(totals) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
