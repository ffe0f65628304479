"""Compile the hot-path modules with mypyc into src/mcpwall/_native_build (see mcpwall._native).

    python tools/build_native.py          # build if the sources changed since the last build
    python tools/build_native.py --force  # build anyway
    python tools/build_native.py --clean  # remove the build (everything runs as Python)

Needs mypy (its mypyc), setuptools and a C compiler. A failed build leaves no
build behind, prints why and exits 0, so `make` goes on with the pure-Python
modules (same behaviour, slower); `--strict` makes a failure exit 1.

With g++ and the RE2 headers (Debian `libre2-dev`) it also builds the policy
engine's thin RE2::Set binding (`src/mcpwall/policy/_re2set.cpp`) into the same
build; without them the policy engine uses google-re2's own binding (same
answers, slower), and `--strict` does not ask for it. Installed later, they are
used after `python tools/build_native.py --force` (the stamp lists what was built).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mcpwall import _native  # noqa: E402

SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify

paths = sys.argv[1:]
sys.argv = sys.argv[:1]
setup(name="mcpwall-native", ext_modules=mypycify(paths, group_name={group!r}, target_dir="c"),
      script_args=["-q", "build_ext", "--build-lib", "out", "--build-temp", "tmp"])
"""

EXTENSIONS = {"mcpwall.policy._re2set": "mcpwall/policy/_re2set.cpp"}

EXT_SETUP = """
import sys
from setuptools import Extension, setup

name, source, build_temp = sys.argv[1:4]
sys.argv = sys.argv[:1]
setup(name="mcpwall-native-ext", ext_modules=[Extension(name, [source], libraries=["re2"], language="c++",
                                                        extra_compile_args=["-std=c++17", "-O2"])],
      script_args=["-q", "build_ext", "--build-lib", "out", "--build-temp", build_temp])
"""


def current() -> bool:
    try:
        recorded = json.loads(_native.STAMP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(recorded.get("sources") == _native.source_hashes()
                and recorded.get("ext_suffix") == sysconfig.get_config_var("EXT_SUFFIX")
                and recorded.get("modules") == _modules())


def _modules() -> list[str]:
    return sorted(f"{p}.{m}" for p, ms in _native.MODULES.items() for m in ms)


def build() -> None:
    hashes = _native.source_hashes()
    with tempfile.TemporaryDirectory(prefix="mcpwall-native-") as tmp:
        work = Path(tmp)
        # A copy of the package: mypyc writes next to what it compiles, and type-checks
        # the modules against the rest of the package.
        shutil.copytree(ROOT / "src" / "mcpwall", work / "mcpwall",
                        ignore=shutil.ignore_patterns("__pycache__", "_native_build", "*.so"))
        paths = [str(Path(*package.split("."), f"{module}.py"))
                 for package, modules in _native.MODULES.items() for module in modules]
        (work / "setup_native.py").write_text(SETUP.format(group=_native.GROUP), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(work)}
        # The project's mypy settings (strict, the untyped libraries it ignores); the sources named
        # here are what is compiled, not the config's `files`.
        config = ["--config-file", str(ROOT / "pyproject.toml")]
        subprocess.run([sys.executable, "setup_native.py", *config, *paths], cwd=work, env=env, check=True)
        built = _extensions(work, env)
        staged = work / "staged"
        out = work / "out"
        for package in ("mcpwall", *_native.MODULES):
            target = staged / package
            target.mkdir(parents=True)
            for so in (out / Path(*package.split("."))).glob("*.so"):
                shutil.copy2(so, target / so.name)
        (staged / _native.STAMP.name).write_text(json.dumps({
            "sources": hashes, "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
            "modules": _modules(), "extensions": built}, indent=1),
            encoding="utf-8")
        shutil.rmtree(_native.BUILD, ignore_errors=True)
        shutil.copytree(staged, _native.BUILD)


def _extensions(work: Path, env: dict[str, str]) -> list[str]:
    """Build the optional C++ extensions into `work/out`; the names of those that built."""
    (work / "setup_ext.py").write_text(EXT_SETUP, encoding="utf-8")
    built = []
    for name, source in EXTENSIONS.items():
        run = subprocess.run([sys.executable, "setup_ext.py", name, source, f"tmp-{name}"], cwd=work, env=env,
                             capture_output=True, text=True)
        if run.returncode == 0:
            built.append(name)
            continue
        why = [line for line in (run.stderr or run.stdout).splitlines() if "error" in line.lower()][:3]
        print(f"native build: {name} not built (needs g++ and libre2-dev): " + (" | ".join(why) or "failed")
              + "; the policy engine uses google-re2's binding (same answers, slower)", file=sys.stderr)
    return built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--clean", action="store_true")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the build fails")
    opts = parser.parse_args()
    if opts.clean:
        shutil.rmtree(_native.BUILD, ignore_errors=True)
        return 0
    if current() and not opts.force:
        print("native build: up to date")
        return 0
    print("native build: compiling " + ", ".join(f"{p}.{m}" for p, ms in _native.MODULES.items() for m in ms)
          + " with mypyc (about a minute)")
    try:
        build()
    except (subprocess.CalledProcessError, OSError, ImportError) as exc:
        shutil.rmtree(_native.BUILD, ignore_errors=True)
        print(f"native build: FAILED ({exc}); the modules run as Python (same behaviour, slower)", file=sys.stderr)
        return 1 if opts.strict else 0
    print(f"native build: done, in {_native.BUILD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
