"""Command start-up: each command started N times as a script or hook starts it (issue 29).

Runs `mcpwall --help`, `simulate` of one call on the built-in policy, `inspect` of one saved
`tools/list` file and `check` of an empty home, each as a fresh process, N times (20 by
default), and prints the median, the fastest and the slowest wall time of each and the median
CPU time (user + system) the process used, with the interpreter's own start (`python -c pass`)
for scale. On a shared machine the fastest start is the one least slowed by the others. Goals (issue 29): `--help` under 0.15 s, `simulate` and `inspect` of one file under
0.3 s. Prints figures, asserts nothing.

    python bench/cli_startup.py [--runs 20] [--mcpwall PATH] [--tree SRC]... [--pure]

`--mcpwall` names the entry point to start (default: the one beside this interpreter). `--tree
SRC` starts it on that source tree instead (`PYTHONPATH=SRC`, ahead of the installed one: e.g. a
`git worktree` of another commit's `src`); given more than once, the trees take turns run by run,
so that each sees the same machine (load that comes and goes on a shared machine falls on all of
them alike), and each gets a column. `--pure` starts every tree with `MCPWALL_PURE=1`: the policy
engine's modules run as Python even where its native build is there (see `mcpwall._native`).
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


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one start."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = 0  # reaped above
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--mcpwall", default=str(Path(sys.executable).parent / "mcpwall"))
    parser.add_argument("--tree", action="append", default=[], help="A source tree to start mcpwall from.")
    parser.add_argument("--pure", action="store_true", help="Ignore the native build (MCPWALL_PURE=1).")
    args = parser.parse_args()
    trees: list[str | None] = list(args.tree) or [None]
    print(f"{platform.node()} {platform.processor() or platform.machine()} Python {platform.python_version()}"
          f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.runs} runs each"
          f"{', pure Python (MCPWALL_PURE=1)' if args.pure else ''}, load average {_load()}"
          + (", trees taking turns: " + ", ".join(f"[{i + 1}] {t}" for i, t in enumerate(args.tree))
             if args.tree else ""))
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        envs = []
        for tree in trees:
            env = {"MCPWALL_HOME": str(tmp / "state"), "PATH": "/usr/bin:/bin"}
            if args.pure:
                env["MCPWALL_PURE"] = "1"
            if tree is not None:
                env["PYTHONPATH"] = str(Path(tree).resolve())
            elif "PYTHONPATH" in os.environ:
                env["PYTHONPATH"] = os.environ["PYTHONPATH"]
            envs.append(env)
        for name, argv in commands(args.mcpwall, tmp).items():
            walls: list[list[float]] = [[] for _ in trees]
            cpus: list[list[float]] = [[] for _ in trees]
            for _ in range(args.runs):
                for i, env in enumerate(envs):
                    wall, cpu = run_once(argv, env)
                    walls[i].append(wall)
                    cpus[i].append(cpu)
            cells = [f"median {statistics.median(w) * 1000:6.1f} ms  min {min(w) * 1000:6.1f}  max {max(w) * 1000:6.1f}"
                     f"  cpu {statistics.median(c) * 1000:6.1f}" for w, c in zip(walls, cpus, strict=True)]
            print(f"{name:16} " + "   |   ".join(cells))
    print(f"load average at the end {_load()}")


def _load() -> str:
    """The 1, 5 and 15 minute load averages, to record how busy the machine was."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
