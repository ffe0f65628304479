"""A real PostgreSQL server for the ledger tests and the benchmark, started in a temporary directory.

PostgreSQL refuses to run as root (initdb exits with "cannot be run as root"),
and CI runs the suite as root. So when the tests run as root the cluster is
created and run as an unprivileged account - `postgres` (the Debian package
creates it) or, failing that, `nobody` - through `subprocess`'s `user=`
argument, in a directory under /tmp owned by that account (pytest's own
temporary directories are 0700 root and not reachable by it). As any other
user it simply runs as that user. It listens on 127.0.0.1 on a free port with
`trust` authentication for the one role `mcpwall`, and is stopped and removed
by `stop()`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.harness import free_port

ROLE = "mcpwall"


def _bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    if candidates:
        return candidates[0]
    raise RuntimeError(f"{name} not found on PATH nor in /usr/lib/postgresql/*/bin: install PostgreSQL "
                       "(apt-get install postgresql)")


def _account() -> pwd.struct_passwd | None:
    """The account to run as: None when not root (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' account exists to run "
                       "PostgreSQL as")


class PostgresServer:
    """One throwaway PostgreSQL cluster."""

    def __init__(self, *, durable: bool = False) -> None:
        #: durable=False turns fsync off (tests: the server itself is never crashed)
        self.durable = durable
        self.account = _account()
        self.base = Path(tempfile.mkdtemp(prefix="mcpwall-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = free_port()
        self.started = False
        if self.account is not None:
            os.chown(self.base, self.account.pw_uid, self.account.pw_gid)

    def _run(self, *args: str, check: bool = True, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, Any] = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        if self.account is not None:
            kwargs.update(user=self.account.pw_uid, group=self.account.pw_gid, extra_groups=[])
            env["HOME"] = str(self.base)
        proc = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=self.base,
                              timeout=timeout, check=False, **kwargs)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}"
                               f"{self._log_tail()}")
        return proc

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return "\nserver log:\n" + self.log.read_text()[-2000:]
        return ""

    def start(self) -> PostgresServer:
        if not self.data.exists():
            self._run(_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", ROLE, "-E", "UTF8",
                      "--no-sync", "--no-instructions")
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c max_connections=200"
        if not self.durable:
            options += " -c fsync=off"
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "-t", "60",
                  "start")
        self.started = True
        self._wait()
        return self

    def _wait(self, timeout: float = 30.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (keeps its data: `start()` brings it back)."""
        if self.started:
            self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)
            self.started = False

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)


__all__ = ["ROLE", "PostgresServer"]
