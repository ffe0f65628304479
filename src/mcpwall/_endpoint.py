"""Where a running gateway listens: `<home>/run/gateway.json`, so commands find it.

`mcpwall proxy` publishes its base URL and PID there (0600) once it accepts connections and
removes the file when it stops; `approve`, `deny` and other commands that talk to a running
gateway read it instead of assuming 127.0.0.1:9420, which failed for every gateway started
with `--port` (issue 29). A file left by a gateway that died (its PID gone) is ignored. Several
gateways on one home: the last to start is the one found, and one stopping removes the file only
while it is still its own.

The file names a URL and a PID, nothing secret; it sits in `run/` beside the token, which the
self-protection guard keeps from agents as the whole home.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import orjson

ENDPOINT_FILE = "gateway.json"


def endpoint_path(home: Path) -> Path:
    return home / "run" / ENDPOINT_FILE


def publish(home: Path, url: str) -> Path:
    """Record that this process serves `url` for `home` (atomically, 0600)."""
    path = endpoint_path(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gateway-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps({"url": url, "pid": os.getpid()}))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def withdraw(home: Path) -> None:
    """Remove the record when it is still this process's own."""
    path = endpoint_path(home)
    record = _read(path)
    if record is not None and record.get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            path.unlink()


def find(home: Path) -> str | None:
    """The base URL of the gateway serving `home`, or None when none is running with an HTTP API."""
    record = _read(endpoint_path(home))
    if record is None:
        return None
    url, pid = record.get("url"), record.get("pid")
    if not isinstance(url, str) or not isinstance(pid, int) or not _alive(pid):
        return None
    return url


def command_hint(verb: str, argument: str, home: Path | None) -> str:
    """`mcpwall VERB ARG`, with `--home` when the gateway's home is not the one the command defaults to."""
    line = f"mcpwall {verb} {argument}"
    if home is not None and _default_home().resolve() != home.expanduser().resolve():
        line += f" --home {home}"
    return line


def _default_home() -> Path:
    env = os.environ.get("MCPWALL_HOME")
    return Path(env).expanduser() if env else Path.home() / ".mcpwall"


def _read(path: Path) -> dict[str, object] | None:
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["ENDPOINT_FILE", "command_hint", "endpoint_path", "find", "publish", "withdraw"]
