"""The README's quick start, run as printed against the gateway `make run` starts.

Strategy: `make run` itself (its prerequisites taken as made: the suite's set-up
installed them) with HOME a temporary directory, so that the README's
`~/.mcpwall` is this test's, and `MCPWALL_RUN_PORT` a free port, which the
README's commands read as `MCPWALL_URL`. Every fenced block marked
`sh quickstart` is run, in order, by one bash script from the repository, as a
user pastes them into one terminal; each block's output is then checked for the
outcome its step promises: allowed, denied (with the rule), redacted, and an
ask that waits until `mcpwall approve` answers it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from tests.harness import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
WRITTEN = ROOT / "examples" / "workspace" / "hello.txt"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```sh quickstart[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.MULTILINE | re.DOTALL)
MARK = "=== quickstart block"


def quickstart_blocks(text: str) -> list[str]:
    """The `sh quickstart` blocks of the README, dedented, in order."""
    return [textwrap.dedent(m.group("body")) for m in FENCE.finditer(text)]


def make_run(home: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`make run` as a user starts it, without re-running its (phony) set-up prerequisite."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPWALL_")}
    env.update(HOME=str(home), MCPWALL_RUN_PORT=str(port))
    with log.open("wb") as out:
        return subprocess.Popen(["make", "--no-print-directory", "-o", "runtime", "run"], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_listening(proc: subprocess.Popen[bytes], url: str, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"make run exited {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            health = httpx.get(f"{url}/health", timeout=1.0, trust_env=False)
            if health.status_code in (200, 401) and "listening" in log.read_text():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"make run did not start listening: {log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def test_the_readme_quick_start_shows_allow_deny_redact_and_ask(tmp_path: Path) -> None:
    blocks = quickstart_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) == 6, "the quick start's steps are the blocks this test checks, in order"
    existed = WRITTEN.exists()
    home, port = tmp_path / "home", free_port()
    home.mkdir()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "make-run.log"
    proc = make_run(home, port, log)
    try:
        wait_listening(proc, url, log)
        # what make run said it serves, in the words the README quotes
        said = log.read_text()
        assert f"listening on {url}" in said, said
        assert "examples/policy.yaml" in said, said
        script = "set -e\n" + "".join(f"echo '{MARK} {i}'\n{block}" for i, block in enumerate(blocks))
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCPWALL_")}
        env.update(HOME=str(home), MCPWALL_URL=url)
        run = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)
        assert run.returncode == 0, run.stdout + run.stderr
        out = dict(enumerate(re.split(rf"^{MARK} \d+\n", run.stdout, flags=re.MULTILINE)[1:]))
        assert len(out) == len(blocks), run.stdout

        setup, allowed, denied, redacted, asked, approved = (out[i] for i in range(6))
        assert '"fs"' in setup, setup
        assert '"time"' in setup, setup
        assert '"ready"' in setup, setup

        # allowed: both calls answer with the servers' own results
        time_call, read_call = allowed.strip().splitlines()
        assert '"result"' in time_call, time_call
        assert "Europe/Paris" in time_call, time_call
        assert '"result"' in read_call, read_call
        assert "The example filesystem server may read this file" in read_call, read_call

        # denied: the gateway answers -32001, naming the rule and what it does
        etc, memory = denied.strip().splitlines()
        assert '"code":-32001' in etc, etc
        assert "block-sensitive-paths" in etc, etc
        assert "Block reads and writes of sensitive system and configuration paths" in etc, etc
        assert "root:" not in etc  # the server never read it
        assert '"code":-32001' in memory, memory
        assert "No matching allow rule found (default deny)" in memory, memory

        # redacted: the file is read, its password masked
        assert '"result"' in redacted
        assert "postgres://deploy:[REDACTED-db-password]@db.staging.internal" in redacted
        assert "q7Lr2Vx9Tm4Kp8Zs" not in redacted

        # ask: the write waited, listed for a person, until `mcpwall approve` released it
        assert "fs/write_file" in asked, asked
        assert "demo-ask-before-writes" in asked, asked
        assert re.search(r"approved \S+: fs/write_file may run once", approved), approved
        assert '"result"' in approved, approved
        assert '"error"' not in approved, approved
        assert approved.rstrip().endswith("written after a yes"), approved
        assert WRITTEN.read_text() == "written after a yes"
    except BaseException:
        print(f"make run's output:\n{log.read_text()[-4000:]}")  # shown with the failure
        raise
    finally:
        stop(proc)
        if not existed:
            WRITTEN.unlink(missing_ok=True)
