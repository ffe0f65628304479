"""Upstream servers for the stage tests: the npm filesystem server and the fake web server.

The gateway these tests drive comes from `tests.harness` (`running`, `context`, `Recorder`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
FAKES = ROOT / "tests" / "fakes"


def filesystem(root: Path) -> dict[str, Any]:
    return {"command": str(BIN / "mcp-server-filesystem"), "args": [str(root)]}


def web(log: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FAKES / "web_server.py")], "env": {"REQUESTS_LOG": str(log)}}
