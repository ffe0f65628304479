"""Compiled builds of the hot-path modules, used when present and built from these sources.

A policy decision is paid on every call, and in CPython most of its cost is the
interpreter itself (bench/policy_eval.py: ~2.6x fewer instructions compiled).
`make setup` compiles the modules in `MODULES` with mypyc
(`tools/build_native.py`): the same source, type-checked strictly already, as
C extensions. Nothing else changes: without a C compiler, or with
`MCPWALL_PURE=1`, the same modules run as Python.

The extensions live outside the source tree, in `_native_build/<package>/`,
with a stamp of the SHA-256 of every source of their packages at build time. A package
that has compiled modules calls `use_compiled(__path__, __name__)` first
thing: when the stamp matches the sources on disk, the build's directory goes
ahead of the sources in the package's `__path__`, so `import` finds the
extension first; when any source differs (edited since the build), the whole
build is ignored and the sources run, so a stale extension can never stand in
for newer code.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

#: package -> modules compiled together (one mypyc group; its runtime lives in `mcpwall`).
#: Only modules whose inputs are checked at the gateway's boundary: compiled code checks
#: declared types at run time, so a str field holding an int raises where Python would
#: have carried on. The ledger's row building was tried with mypyc and left out (17% fewer
#: instructions, and its events carry whatever a client sent); it has a hand-written C
#: builder instead (`ledger/_rows.c`, below), which hands anything unusual back to Python.
#: The detectors' walks (`mcpwall.security`: flattening, classify, the heuristics, path checks, the
#: attack chains, the result scan) take any JSON value typed `Any` and are compiled too (issue 28: -4%
#: instructions a shipped call); tests/test_native.py runs their adversarial tests as Python as well.
#: The 2026-07-28 era's own work per call (`protocol.modern`: the envelope, `resultType`, the bridge's
#: params; `proxy._modern`, `_mcp_headers`, `_passed`, `_bound`, `_mrtr`, `_upstream_modern`: the sessionless door, the remembered
#: call, MRTR, the modern upstream) is compiled too (issue 24: its cost beside the legacy session's).
#: So are the defence stages (`mcpwall.stages`, issue 28), whose JSON is typed `Any` or `object` where it
#: is read; three things stay as Python: their pydantic blocks (`stages/_configs.py`: mypyc would build a
#: model from its annotations' bare classes, `list[str]` as `list`, and validate less), the stages not
#: tried yet (`auth`'s door check, `capture`'s tap, `notify`, which does little per call without
#: webhooks), and the list and its services (`__init__`, `_components`).
#: So is what the metrics count as each request finishes (`metrics._counts`; the Prometheus collector,
#: read per scrape, stays Python).
#: So is what every stage is handed (`pipeline._context`: `RequestContext`, ~160 field reads a shipped call,
#: each a generic attribute lookup on a Python class; the rest of `mcpwall.pipeline` stays Python).
#: So is the routing and the forward (`proxy._routing`, every request: its reads of `RequestContext` and `Session`
#: from Python went through their getset descriptors; -15,000 instructions a call, issue 28).
#: Compiled, a tuple is rebuilt where it is passed on: compare sentinels by value (`security._encoded.KNOWN`);
#: and a test cannot patch what a compiled module calls.
MODULES: dict[str, tuple[str, ...]] = {
    "mcpwall.policy": ("_plan", "_evaluate", "_facts", "_spelling", "_match", "_compile", "_decision",
                       "_calls", "_calls_args", "_calls_files", "_calls_net", "_calls_presented", "_calls_programs",
                       "_calls_secrets", "_calls_shell",
                       "_shell", "_shell_expand", "_normalize", "_url", "_host", "_realpath"),
    "mcpwall.security": ("_json", "_classify", "_poisoning_results", "chains", "schema", "_heuristics", "_paths",
                         "selfguard", "judge", "_secrets", "_prefilter", "_decode", "_poisoning_decoded", "dlp", "_encoded",
                         "_poisoning_walk"),
    "mcpwall.protocol": ("modern", "_wire"),
    "mcpwall.metrics": ("_counts",),
    "mcpwall.pipeline": ("_context", "_session"),
    "mcpwall.proxy": ("_passed", "_upstream_modern", "_modern", "_mcp_headers", "_bound", "_mrtr", "_pipeline", "_traced",
                      "_asgi", "_routing"),
    "mcpwall.stages": ("_kit", "chain", "poisoning", "dlp", "honeytokens", "honeytokens_inject", "response_rules",
                       "schema", "pins", "policy", "protocol", "ratelimit", "circuit", "selfguard", "rbac",
                       "threatintel", "judge", "listfilter", "audit", "metrics", "auth"),
}
#: C and C++ extensions built next to them when their compiler and headers are there (module -> source
#: under src/mcpwall); each is optional: without it the code that uses it takes its Python path.
EXTENSIONS: dict[str, str] = {
    "mcpwall.policy._re2set": "policy/_re2set.cpp",  # RE2::Set without pybind11 (needs g++, libre2-dev)
    "mcpwall.ledger._bulk": "ledger/_bulk.c",  # SQLite batches without the GIL (needs libsqlite3-dev)
    "mcpwall.ledger._rows": "ledger/_rows.c",  # the ledger's build_row for the usual event (needs libssl-dev)
}
SRC = Path(__file__).resolve().parent
BUILD = SRC / "_native_build"
STAMP = BUILD / "sources.json"
#: The mypyc group's name: its shared runtime is the module `mcpwall._native_rt__mypyc`.
GROUP = "mcpwall._native_rt"

_valid: bool | None = None


def source_hashes() -> dict[str, str]:
    """SHA-256 of every source of the packages with compiled modules: the compiled code was
    type-checked against its neighbours too, so a change to any of them calls for a new build."""
    out = {}
    for package in MODULES:
        folder = SRC.parent / Path(*package.split("."))
        for path in sorted(folder.glob("*.py")):
            out[f"{package}.{path.stem}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    for module, source in EXTENSIONS.items():
        path = SRC / source
        with contextlib.suppress(OSError):
            out[f"{module.rpartition('.')[0]}.{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def packages() -> list[str]:
    """The packages whose `__path__` a build extends: those with compiled modules or extensions."""
    return sorted({*MODULES, *(m.rpartition(".")[0] for m in EXTENSIONS)})


def build_valid() -> bool:
    """Whether a build exists and was made from exactly the sources on disk (checked once)."""
    global _valid
    if _valid is None:
        try:
            recorded = json.loads(STAMP.read_text(encoding="utf-8"))
            _valid = isinstance(recorded, dict) and recorded.get("sources") == source_hashes()
        except (OSError, ValueError):
            _valid = False
    return _valid


def enabled() -> bool:
    return os.environ.get("MCPWALL_PURE", "") in ("", "0") and build_valid()


def use_compiled(path: list[str], package: str) -> None:
    """Put the compiled modules of `package` ahead of its sources when the build is current."""
    if (package in packages() or package == "mcpwall") and enabled():
        path.insert(0, str(BUILD / package))


def hot_path() -> dict[str, object]:
    """How the hot path runs in this process, for `/health` and `mcpwall status`: `compiled`,
    `disabled` (MCPWALL_PURE), `stale` (a build exists but a source changed after it was made: the
    sources run, correct but slower, until `make native` runs again) or `absent` (no build)."""
    if os.environ.get("MCPWALL_PURE", "") not in ("", "0"):
        state = "disabled"
    elif build_valid():
        state = "compiled"
    else:
        state = "stale" if STAMP.exists() else "absent"
    return {"state": state, "modules": len(compiled_modules())}


def compiled_modules() -> list[str]:
    """The modules running compiled in this process (printed by bench/policy_eval.py; the tests)."""
    import sys

    out = []
    for package, modules in MODULES.items():
        for module in modules:
            loaded = sys.modules.get(f"{package}.{module}")
            if loaded is not None and str(getattr(loaded, "__file__", "")).endswith(".so"):
                out.append(f"{package}.{module}")
    return out


__all__ = ["BUILD", "EXTENSIONS", "GROUP", "MODULES", "STAMP", "build_valid", "compiled_modules", "enabled", "hot_path",
           "packages", "source_hashes", "use_compiled"]
