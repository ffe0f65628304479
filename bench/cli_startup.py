"""Command start-up: each command started N times as a script or hook starts it (issue 29).

Runs `mcpwall --help`, `simulate` of one call on the built-in policy, `inspect` of one saved
`tools/list` file and `check` of an empty home, each as a fresh process, N times (20 by
default), and prints the median and the slowest wall time of each, with the interpreter's own
start (`python -c pass`) for scale. Goals (issue 29): `--help` under 0.15 s, `simulate` and
`inspect` of one file under 0.3 s. Prints figures, asserts nothing.

    python bench/cli_startup.py [--runs 20] [--mcpwall PATH]

`--mcpwall` names the entry point to start (default: the one beside this interpreter), so two
heads can be compared in one run: `PYTHONPATH=/other/tree/src python bench/cli_startup.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS_LIST = {"tools": [{"name": "read_file", "description": "Read a file from the workspace.",
                         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}


def commands(mcpwall: str, tmp: Path) -> dict[str, list[str]]:
    saved = tmp / "tools.json"
    saved.write_text(json.dumps(TOOLS_LIST))
    (tmp / "home").mkdir()
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "--help": [mcpwall, "--help"],
        "simulate": [mcpwall, "simulate", "read_file", "--args", '{"path": "/etc/passwd"}', "--json"],
        "inspect FILE": [mcpwall, "inspect", str(saved), "--json"],
        "check": [mcpwall, "check", "--scan-home", str(tmp / "home"), "--platform", "linux"],
    }


def time_runs(argv: list[str], runs: int, home: Path) -> list[float]:
    env = {"MCPWALL_HOME": str(home), "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False, timeout=60)
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--mcpwall", default=str(Path(sys.executable).parent / "mcpwall"))
    args = parser.parse_args()
    print(f"{platform.node()} {platform.processor() or platform.machine()} Python {platform.python_version()}"
          f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.runs} runs each")
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        for name, argv in commands(args.mcpwall, tmp).items():
            times = time_runs(argv, args.runs, tmp / "state")
            print(f"{name:16} median {statistics.median(times) * 1000:7.1f} ms   max {max(times) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
