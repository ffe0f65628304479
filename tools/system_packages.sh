#!/usr/bin/env bash
# The Debian packages the test suite drives for real, installed when missing (`make test` runs this).
#   bubblewrap     sandboxed servers and agents (tests/sandbox)
#   postgresql     the PostgreSQL ledger backend (tests/ledger)
#   redis-server   state shared by several gateway replicas (tests/shared)
#   chromium       dashboard browser tests through Playwright (tests/dashboard)
#   gcc            compiles the hot-path modules with mypyc (tools/build_native.py)
#   g++, libre2-dev             the policy engine's RE2::Set binding (src/mcpwall/policy/_re2set.cpp)
#   libsqlite3-dev, libssl-dev  the ledger's C writer and row builder (src/mcpwall/ledger/_bulk.c, _rows.c)
#   wrk            the HTTP load of bench/proxy_overhead.py (make bench)
#   curl           the README's quick start, which tests/test_quickstart.py runs as printed
#   glewlwyd       a real OAuth 2.1 / OIDC authorization server (tests/oauth)
#   nginx          a round-robin balancer in front of gateway replicas (tests/proxy/test_modern_replicas.py)
# As root it runs apt-get directly, otherwise through sudo; it prints what it installs, and does
# nothing (quickly) when every package is there. Not Debian (no dpkg-query): it says so and goes on.
set -euo pipefail

packages=(bubblewrap postgresql redis-server chromium gcc g++ libre2-dev libsqlite3-dev libssl-dev wrk curl glewlwyd nginx)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "system packages: not a Debian system; install the equivalents of: ${packages[*]}" >&2
  exit 0
fi
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "system packages missing: ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "==> installing Debian packages the tests use: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "==> installed: ${missing[*]}"
