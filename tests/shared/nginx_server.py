"""A throwaway nginx (Debian's, tools/system_packages.sh) balancing round-robin over gateway replicas.

Its own prefix and config in a temporary folder, listening on 127.0.0.1 only, no daemon, its
pid file there; stopped by that pid. Responses are not buffered (event streams), and the
client's Host header is passed on, so each replica is started with `--allow-host` for it.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.harness import free_port

CONF = """\
worker_processes 1;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  upstream replicas {{
{servers}
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 120s;
    }}
  }}
}}
"""


class NginxServer:
    def __init__(self, base: Path, ports: list[int]) -> None:
        found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
        if found is None:
            raise RuntimeError("nginx not found: install it (apt-get install nginx)")
        self.binary = found
        self.base = base
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (base / "tmp").mkdir(parents=True, exist_ok=True)
        self.conf = base / "nginx.conf"
        servers = "\n".join(f"    server 127.0.0.1:{p};" for p in ports)
        self.conf.write_text(CONF.format(tmp=base / "tmp", servers=servers, port=self.port))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> NginxServer:
        pid = self.base / "nginx.pid"
        self.proc = subprocess.Popen(
            [self.binary, "-p", str(self.base), "-c", str(self.conf),
             "-g", f"daemon off; pid {pid}; error_log {self.base / 'error.log'};"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {(self.base / 'error.log').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("nginx did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: the master stops its worker
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
