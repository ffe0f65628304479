"""The compiled hot-path modules (mcpwall._native): used when current, never when stale,
and deciding exactly as the Python sources do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpwall import _native

ROOT = Path(__file__).resolve().parents[1]

# Decisions for a varied call stream (bench/policy_eval.py's), default and generated
# 1,000-rule policies, printed as JSON lines: run once compiled and once as Python.
_DECIDE = """
import json, random, sys
sys.path.insert(0, {bench!r})
from datetime import datetime
from policy_eval import call_stream, generated_policy
import importlib
from mcpwall._native import MODULES, compiled_modules
for package, modules in MODULES.items():  # (the detectors too, which deciding alone does not load)
    for module in modules:
        importlib.import_module(package + "." + module)
from mcpwall.policy import Context, PolicyEngine, evaluate, prepare
rng = random.Random(7)
ctx = Context(now=datetime(2026, 11, 30, 3, 0).astimezone(), requests_last_minute=5)
default = PolicyEngine.from_template("default").compiled
out = {{"compiled": compiled_modules(), "decisions": [],
        "native_sets": default.fast.arg_set._native_mask is not None}}
for policy, extra in ((default, 0), (generated_policy(1000, rng), 1000)):
    for call in call_stream(3000, rng, extra_tools=extra):
        d = evaluate(policy, prepare(call), ctx)
        out["decisions"].append([d.action, list(d.rule_ids), sorted(d.redacted_keys), d.timeout_ms])
print(json.dumps(out))
"""


def _decisions(pure: bool) -> dict[str, Any]:
    env = {**os.environ, "MCPWALL_PURE": "1" if pure else "0"}
    done = subprocess.run([sys.executable, "-c", _DECIDE.format(bench=str(ROOT / "bench"))], env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_compiler_on_the_machine_means_the_hot_path_runs_compiled() -> None:
    # `make setup` builds it; a silently failing build would leave every decision ~1.7x slower.
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the modules run as Python")
    assert _native.build_valid(), "the native build is missing or stale: run `make native`"
    compiled = _decisions(pure=False)["compiled"]
    assert compiled == [f"{p}.{m}" for p, ms in _native.MODULES.items() for m in ms]


def _as_python(tmp_path: Path, *groups: list[str], timeout: int) -> None:
    """pytest over each group of test paths (and options) with the sources as Python (`MCPWALL_PURE=1`), the groups
    side by side: the suite itself waits meanwhile, so they share the machine's cores (~1 minute
    each instead of ~2 in a row, for CI's 30-minute budget); each has its own basetemp."""
    env = {**os.environ, "MCPWALL_PURE": "1"}
    runs = []
    for n, paths in enumerate(groups):
        log = tmp_path / f"run{n}.log"
        with log.open("w") as out:
            runs.append((log, subprocess.Popen(
                [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                 f"--basetemp={tmp_path / f'base{n}'}", *paths],
                env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)))
    try:
        codes = [proc.wait(timeout) for _, proc in runs]
    finally:
        for _, proc in runs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    failed = [log.read_text(errors="replace")[-8000:] for (log, _), code in zip(runs, codes, strict=True) if code]
    assert not failed, "\n\n".join(failed)  # (each end: the failures, then the slowest tests)


@pytest.mark.timeout(900)  # the suite's 120 s is per test; this one runs two groups (~70 s each here)
def test_the_detectors_and_the_modern_door_run_as_python_find_what_they_find_compiled(tmp_path: Path) -> None:
    # CI runs the suite with the compiled detectors and door (`make setup` builds them); a machine without
    # a C compiler runs their sources. The detectors' adversarial tests, and the 2026-07-28 era's modules'
    # (`protocol.modern`, `proxy._modern`, `_passed`, `_mrtr`, `_upstream_modern`: both eras, bridging
    # and MRTR) and the pipeline runner's (`proxy._pipeline`), once more, as Python. Of tests/security the
    # detectors' own tests: its 42 that start a gateway on real servers (the self-protection reviews, the
    # poisoning stage end to end) took more than half of this run's time for CI's 30-minute budget, and
    # they reach the same detectors as the rest
    door = [str(ROOT / "tests" / "proxy" / name) for name in (
        "test_core_stages.py", "test_modern_http.py", "test_modern_passed.py", "test_modern_upstream.py", "test_mrtr.py", "test_mrtr_eras.py")]
    _as_python(tmp_path, ["-m", "not integration", str(ROOT / "tests" / "security")],
               [str(ROOT / "tests" / "stages"), *door], timeout=840)


def _re2_headers() -> bool:
    return shutil.which("g++") is not None and any(
        Path(d, "re2", "set.h").exists() for d in ("/usr/include", "/usr/local/include"))


def test_the_thin_re2_binding_is_built_and_used_where_g_plus_plus_and_libre2_dev_are() -> None:
    if not _re2_headers():
        pytest.skip("no g++ or RE2 headers here: the policy engine uses google-re2's binding")
    assert _native.build_valid(), "the native build is missing or stale: run `make native`"
    stamp = json.loads(_native.STAMP.read_text(encoding="utf-8"))
    assert "mcpwall.policy._re2set" in stamp["extensions"]
    assert _decisions(pure=False)["native_sets"] is True


def test_compiled_and_python_modules_decide_the_same() -> None:
    if not _native.build_valid():
        pytest.skip("no native build to compare with")
    native, pure = _decisions(pure=False), _decisions(pure=True)
    assert pure["compiled"] == []
    assert pure["native_sets"] is False
    assert native["compiled"]
    assert native["decisions"] == pure["decisions"]
    actions = {d[0] for d in native["decisions"]}
    assert {"allow", "deny"} <= actions  # the stream exercises more than one outcome


def test_a_build_from_other_sources_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stamp = tmp_path / "sources.json"
    monkeypatch.setattr(_native, "STAMP", stamp)
    monkeypatch.setattr(_native, "_valid", None)
    hashes = _native.source_hashes()
    stamp.write_text(json.dumps({"sources": hashes}))
    assert _native.build_valid()
    edited = dict(hashes)
    edited["mcpwall.policy._plan"] = "0" * 64  # _plan.py changed since the build
    stamp.write_text(json.dumps({"sources": edited}))
    monkeypatch.setattr(_native, "_valid", None)
    assert not _native.build_valid()
    path: list[str] = ["src"]
    _native.use_compiled(path, "mcpwall.policy")
    assert path == ["src"]
    monkeypatch.setattr(_native, "_valid", None)
    stamp.write_text("not json")
    assert not _native.build_valid()


def test_status_says_when_a_stale_or_missing_build_leaves_the_hot_path_in_python(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpwall.cli._status import warnings

    stamp = tmp_path / "sources.json"
    monkeypatch.setattr(_native, "STAMP", stamp)
    monkeypatch.delenv("MCPWALL_PURE", raising=False)
    seen = {}
    for name, text in (("absent", None), ("stale", json.dumps({"sources": {"mcpwall.policy._plan": "0" * 64}})),
                       ("compiled", json.dumps({"sources": _native.source_hashes()}))):
        if text is not None:
            stamp.write_text(text)
        monkeypatch.setattr(_native, "_valid", None)
        seen[name] = _native.hot_path()["state"]
        said = warnings({"hot_path": _native.hot_path()})
        assert bool(said) == (name != "compiled"), (name, said)
    assert seen == {"absent": "absent", "stale": "stale", "compiled": "compiled"}
    assert "make native" in warnings({"hot_path": {"state": "stale"}})[0]
    monkeypatch.setenv("MCPWALL_PURE", "1")  # asked for: said, not warned
    assert _native.hot_path()["state"] == "disabled"
    assert warnings({"hot_path": _native.hot_path()}) == []


def test_every_source_of_a_compiled_package_is_in_the_stamp() -> None:
    hashes = _native.source_hashes()
    for package, modules in _native.MODULES.items():
        directory = ROOT / "src" / Path(*package.split("."))
        assert {f"{package}.{p.stem}" for p in directory.glob("*.py")} <= set(hashes)
        assert {f"{package}.{p.name}" for p in directory.glob("*.cpp")} <= set(hashes)
        assert {f"{package}.{m}" for m in modules} <= set(hashes)
    assert "mcpwall.policy._re2set.cpp" in hashes


def _imports_from(node: object, package: str) -> bool:
    """Whether `node` imports anything of `package` (relatively, or by its name)."""
    import ast

    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return bool(node.level) or module == package or module.startswith(package + ".")
    return isinstance(node, ast.Import) and any(a.name.startswith(package + ".") for a in node.names)


def test_every_compiled_package_puts_its_build_first_before_it_imports_a_submodule() -> None:
    # Compiled code that imports a compiled class finding the Python one instead crashes the process at
    # import (a segfault, no error): each package's `__init__` must call `use_compiled` before anything
    # of its own is imported.
    import ast

    for package in _native.packages():
        init = ROOT / "src" / Path(*package.split(".")) / "__init__.py"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id in ("_use_compiled", "use_compiled")]
        own = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) and _imports_from(n, package)]
        assert calls, f"{package}/__init__.py never calls use_compiled"
        assert not own or min(calls) < min(own), f"{package}/__init__.py imports a submodule before use_compiled"


def test_pure_mode_ignores_a_current_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_native, "_valid", True)
    monkeypatch.setenv("MCPWALL_PURE", "1")
    path: list[str] = []
    _native.use_compiled(path, "mcpwall.policy")
    assert path == []
    monkeypatch.setenv("MCPWALL_PURE", "0")
    _native.use_compiled(path, "mcpwall.policy")
    assert path == [str(_native.BUILD / "mcpwall.policy")]
    _native.use_compiled(path, "mcpwall.dashboard")  # nothing of it is compiled
    assert path == [str(_native.BUILD / "mcpwall.policy")]


def _ledger_headers() -> bool:
    return shutil.which("gcc") is not None and all(
        any(Path(d, *h.split("/")).exists() for d in ("/usr/include", "/usr/local/include"))
        for h in ("sqlite3.h", "openssl/evp.h"))


def test_the_ledgers_c_writer_is_built_and_used_where_its_headers_are() -> None:
    if not _ledger_headers():
        pytest.skip("no SQLite or OpenSSL headers here: the ledger writes through Python")
    assert _native.build_valid(), "the native build is missing or stale: run `make native`"
    stamp = json.loads(_native.STAMP.read_text(encoding="utf-8"))
    assert {"mcpwall.ledger._bulk", "mcpwall.ledger._rows"} <= set(stamp["extensions"])
    probe = ("from mcpwall.ledger import _event, _sqlite; from pathlib import Path; "
             "print(_event._NATIVE is not None, _sqlite._BULK is not None, "
             "_sqlite.SqliteBackend(Path('x')).inserts_without_gil)")
    for pure, expected in (("0", "True True True"), ("1", "False False False")):
        done = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "MCPWALL_PURE": pure}, cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=True)
        assert done.stdout.strip() == expected, (pure, done.stdout, done.stderr)
