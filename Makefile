# The README's two commands: `make run` and `make test`. Each sets up what it
# needs from nothing first: `make run` only what the gateway and the example
# servers need; `make test` everything the suite drives, Debian packages included.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUN_STAMP  := $(VENV)/.installed-run
PY_STAMP   := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
# The MCP conformance suite: its own npm project, pinned for Node 20 (docs/CONFORMANCE.md).
CONF_DIR   := tests/conformance
CONF_STAMP := $(CONF_DIR)/node_modules/.installed
# Suite 0.2.x, with the Node 22 it needs from npm's `node` package, pinned in its own npm project.
CONF2_DIR   := tests/conformance2
CONF2_STAMP := $(CONF2_DIR)/node_modules/.installed
# npm tools only the tests use (the SARIF Multitool).
TOOLS_DIR   := tests/tools
TOOLS_STAMP := $(TOOLS_DIR)/node_modules/.installed
MCPWALL_RUN_HOME ?= $(HOME)/.mcpwall
# The demo policy for the example servers (the README's quick start), and the port.
MCPWALL_RUN_POLICY ?= examples/policy.yaml
MCPWALL_RUN_PORT ?= 9420
# The suite's workers (pytest-xdist): one a core. Each takes whole test files (`--dist loadfile`), so a
# module's fixtures (a conformance run, a PostgreSQL server) are set up once; PYTEST_JOBS=0 runs it in one process.
PYTEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# Jobs for the set-up and the checks: the hot path's C compile is one process for minutes, so the
# lint, the type check and the npm installs run beside it.
SETUP_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
say = @echo "==> $(1)"

.PHONY: run runtime test unit lint typecheck pytest suite bench setup prepared system native clean

# Everything the suite drives: Debian packages (first: the rest needs them), then side by side the
# dev environment, every npm project and the native build (listed first: it takes longest).
setup: system
	@$(MAKE) --no-print-directory -j$(SETUP_JOBS) prepared

prepared: native $(PY_STAMP) $(NODE_STAMP) $(CONF_STAMP) $(CONF2_STAMP) $(TOOLS_STAMP)

# What `make run` needs: mcpwall with its runtime dependencies and the example servers (no test tools).
runtime: $(RUN_STAMP) $(NODE_STAMP)

system:
	@bash tools/system_packages.sh

# The policy engine's hot path compiled with mypyc (src/mcpwall/_native.py), its RE2::Set
# binding where g++ and libre2-dev are, and the ledger's C writer where libsqlite3-dev and
# libssl-dev are; a no-op when the build matches the sources, and without a C compiler the
# modules run as Python.
native: $(PY_STAMP)
	$(call say,compiling the hot path (mypyc, RE2::Set, the ledger's C writer; two to three minutes the first time))
	@$(BIN)/python tools/build_native.py

$(BIN)/python:
	$(call say,creating $(VENV))
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(call say,installing mcpwall and its runtime dependencies into $(VENV))
	@$(BIN)/python -m pip install --quiet -e '.[examples]'
	@touch $@

$(PY_STAMP): pyproject.toml | $(BIN)/python
	$(call say,installing mcpwall with its development and test dependencies into $(VENV))
	@$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@ $(RUN_STAMP)

$(NODE_STAMP): package.json package-lock.json
	$(call say,installing the example MCP servers from npm)
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(CONF_STAMP): $(CONF_DIR)/package.json $(CONF_DIR)/package-lock.json
	$(call say,installing the MCP conformance suite from npm)
	@npm ci --prefix $(CONF_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

$(CONF2_STAMP): $(CONF2_DIR)/package.json $(CONF2_DIR)/package-lock.json
	$(call say,installing the MCP conformance suite 0.2.x and Node 22 from npm)
	@npm ci --prefix $(CONF2_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

$(TOOLS_STAMP): $(TOOLS_DIR)/package.json $(TOOLS_DIR)/package-lock.json
	$(call say,installing the npm tools the tests use)
	@npm ci --prefix $(TOOLS_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

# Start the gateway on the example servers from examples/servers.json under the
# demo policy (the built-in default plus rules that allow, redact and ask), with its
# SQLite ledger and token in $(MCPWALL_RUN_HOME), on 127.0.0.1:$(MCPWALL_RUN_PORT).
# It uses the compiled hot path when `make test` or `make native` has built it.
run: runtime
	$(call say,starting the gateway (policy $(MCPWALL_RUN_POLICY), state in $(MCPWALL_RUN_HOME)))
	@$(BIN)/mcpwall proxy --home $(MCPWALL_RUN_HOME) --policy $(MCPWALL_RUN_POLICY) --port $(MCPWALL_RUN_PORT) \
		--servers examples/servers.json

lint: $(PY_STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/lint-imports

typecheck: $(PY_STAMP)
	$(BIN)/mypy

pytest: setup
	@$(MAKE) --no-print-directory suite

# The suite once everything it drives is there (`pytest` and `test` set that up first).
suite: prepared
	$(BIN)/pytest -n $(PYTEST_JOBS) --dist loadfile

# The Debian packages, then the set-up, the lint and the type check side by side, then the suite.
test: system
	@$(MAKE) --no-print-directory -j$(SETUP_JOBS) native lint typecheck suite

# The fast tests, without the set-up of system packages and npm projects.
unit: $(PY_STAMP)
	$(BIN)/pytest -q -m "not integration"

bench: setup
	$(BIN)/python bench/policy_eval.py
	$(BIN)/python bench/discovery_scan.py
	$(BIN)/python bench/ledger_write.py
	$(BIN)/python bench/cli_startup.py
	$(BIN)/python bench/proxy_overhead.py --stages core
	$(BIN)/python bench/proxy_overhead.py --stages all

clean:
	rm -rf src/mcpwall/_native_build $(VENV) node_modules $(CONF_DIR)/node_modules $(CONF2_DIR)/node_modules $(TOOLS_DIR)/node_modules .mypy_cache .ruff_cache .pytest_cache
