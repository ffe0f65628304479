# The README's two commands: `make run` and `make test`. Each sets up what it
# needs from nothing (a virtual environment, the npm test servers) first.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY_STAMP   := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
# The MCP conformance suite: its own npm project, pinned for Node 20 (docs/CONFORMANCE.md).
CONF_DIR   := tests/conformance
CONF_STAMP := $(CONF_DIR)/node_modules/.installed
MCPWALL_RUN_HOME ?= $(HOME)/.mcpwall

.PHONY: run test lint typecheck pytest bench setup native clean

setup: $(PY_STAMP) $(NODE_STAMP) $(CONF_STAMP) native

# The policy engine's hot path compiled with mypyc (src/mcpwall/_native.py), its RE2::Set
# binding where g++ and libre2-dev are, and the ledger's C writer where libsqlite3-dev and
# libssl-dev are; a no-op when the build matches the sources, and without a C compiler the
# modules run as Python.
native: $(PY_STAMP)
	$(BIN)/python tools/build_native.py

$(PY_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(CONF_STAMP): $(CONF_DIR)/package.json $(CONF_DIR)/package-lock.json
	npm ci --prefix $(CONF_DIR) --no-audit --no-fund --loglevel=error
	touch $@

# Start the gateway on its embedded defaults: SQLite ledger and default policy
# in $(MCPWALL_RUN_HOME), the example servers from examples/servers.json.
run: setup
	$(BIN)/mcpwall proxy --home $(MCPWALL_RUN_HOME) --servers examples/servers.json

lint: $(PY_STAMP)
	$(BIN)/ruff check src tests bench tools

typecheck: $(PY_STAMP)
	$(BIN)/mypy

pytest: setup
	$(BIN)/pytest

test: lint typecheck pytest

bench: setup
	$(BIN)/python bench/policy_eval.py
	$(BIN)/python bench/discovery_scan.py
	$(BIN)/python bench/ledger_write.py
	$(BIN)/python bench/proxy_overhead.py --stages core
	$(BIN)/python bench/proxy_overhead.py --stages all

clean:
	rm -rf src/mcpwall/_native_build $(VENV) node_modules $(CONF_DIR)/node_modules .mypy_cache .ruff_cache .pytest_cache
