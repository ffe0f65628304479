"""Compile the hot-path modules with mypyc into src/mcpwall/_native_build (see mcpwall._native).

    python tools/build_native.py          # build if the sources changed since the last build
    python tools/build_native.py --force  # build anyway
    python tools/build_native.py --clean  # remove the build (everything runs as Python)

Needs mypy (its mypyc), setuptools and a C compiler. A failed build leaves no
build behind, prints why and exits 0, so `make` goes on with the pure-Python
modules (same behaviour, slower); `--strict` makes a failure exit 1.

It also builds, into the same build, the C and C++ extensions of
`_native.EXTENSIONS` whose compiler and headers are there: the policy engine's
thin RE2::Set binding (`src/mcpwall/policy/_re2set.cpp`; g++, Debian
`libre2-dev`) and the ledger's GIL-free batch writer (`src/mcpwall/ledger/_bulk.c`;
`libsqlite3-dev`, `libssl-dev`). Each is optional: without it that code takes its slower path
with the same results, and `--strict` does not ask for it. Headers installed later
are used after `python tools/build_native.py --force` (the stamp lists what was built).
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mcpwall import _native  # noqa: E402

SETUP = """
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from setuptools import setup
from distutils.ccompiler import CCompiler  # (imported after setuptools: setuptools' own distutils)
from mypyc.build import mypycify


def compile_side_by_side(self, sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                         extra_preargs=None, extra_postargs=None, depends=None):
    # CCompiler.compile, its sources compiled side by side (distutils runs one compiler at a time)
    macros, objects, extra_postargs, pp_opts, build = self._setup_compile(
        output_dir, macros, include_dirs, sources, depends, extra_postargs)
    cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for done in [pool.submit(self._compile, obj, *build[obj], cc_args, extra_postargs, pp_opts)
                     for obj in objects if obj in build]:
            done.result()
    return objects


CCompiler.compile = compile_side_by_side
paths = sys.argv[1:]
sys.argv = sys.argv[:1]
# A C file a module (`multi_file`): the whole group as one file took gcc -O3 5.5 minutes on one core, the
# files 3 minutes of CPU in all, on every core
modules = mypycify(paths, group_name={group!r}, target_dir="c", multi_file=True)
for ext in modules:  # (mypyc writes the group's headers into the group's package folder, the modules' files beside it)
    ext.include_dirs.append(os.path.join("c", *{group!r}.split(".")[:-1]))
setup(name="mcpwall-native", ext_modules=modules,
      script_args=["-q", "build_ext", "--build-lib", "out", "--build-temp", "tmp"])
"""

#: How each of `_native.EXTENSIONS` is built: (libraries, extra compiler flags, what it needs, what happens
#: without it).
EXT_BUILD = {
    "mcpwall.policy._re2set": ("re2", ["-std=c++17", "-O2"], "g++ and libre2-dev",
                               "the policy engine uses google-re2's binding (same answers, slower)"),
    "mcpwall.ledger._bulk": ("sqlite3,crypto", ["-O2"], "gcc, libsqlite3-dev and libssl-dev",
                             "the ledger writes through Python's sqlite3 (same rows, slower)"),
    "mcpwall.ledger._rows": ("crypto", ["-O2"], "gcc and libssl-dev",
                             "the ledger builds its rows in Python (same rows, slower)"),
}

EXT_SETUP = """
import sys
from setuptools import Extension, setup

name, source, libraries, build_temp, *flags = sys.argv[1:]
sys.argv = sys.argv[:1]
setup(name="mcpwall-native-ext", ext_modules=[Extension(name, [source], libraries=libraries.split(","),
                                                        extra_compile_args=flags)],
      script_args=["-q", "build_ext", "--build-lib", "out-ext", "--build-temp", build_temp])
"""


def current() -> bool:
    try:
        recorded = json.loads(_native.STAMP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(recorded.get("sources") == _native.source_hashes()
                and recorded.get("ext_suffix") == sysconfig.get_config_var("EXT_SUFFIX")
                and recorded.get("modules") == _modules())


def can_compile() -> bool:
    """Whether this interpreter can build extensions here: a C compiler and Python's headers."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    return bool(cc and shutil.which(cc[0])
                and Path(sysconfig.get_paths()["include"], "Python.h").is_file())


def _modules() -> list[str]:
    return sorted(f"{p}.{m}" for p, ms in _native.MODULES.items() for m in ms)


def build(target: Path = _native.BUILD) -> None:
    """Compile into `target` (the tree's build, or a wheel's: tools/hatch_build.py)."""
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
        # The extensions build beside the mypyc group (into their own folder), whose C compile is one
        # compiler process for minutes
        with ThreadPoolExecutor(1) as beside:
            extensions = beside.submit(_extensions, work, env)
            subprocess.run([sys.executable, "setup_native.py", *config, *paths], cwd=work, env=env, check=True)
            built = extensions.result()
        staged = work / "staged"
        for package in ("mcpwall", *_native.packages()):
            folder = staged / package
            folder.mkdir(parents=True)
            for out in (work / "out", work / "out-ext"):
                for so in (out / Path(*package.split("."))).glob("*.so"):
                    shutil.copy2(so, folder / so.name)
        (staged / _native.STAMP.name).write_text(json.dumps({
            "sources": hashes, "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
            "modules": _modules(), "extensions": built}, indent=1),
            encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(staged, target)


def _extensions(work: Path, env: dict[str, str]) -> list[str]:
    """Build the optional C and C++ extensions into `work/out-ext`; the names of those that built."""
    (work / "setup_ext.py").write_text(EXT_SETUP, encoding="utf-8")
    built = []
    for name, source in _native.EXTENSIONS.items():
        libraries, flags, needs, without = EXT_BUILD[name]
        run = subprocess.run([sys.executable, "setup_ext.py", name, f"mcpwall/{source}", libraries, f"tmp-{name}",
                              *flags], cwd=work, env=env, capture_output=True, text=True)
        if run.returncode == 0:
            built.append(name)
            continue
        why = [line for line in (run.stderr or run.stdout).splitlines() if "error" in line.lower()][:3]
        print(f"native build: {name} not built (needs {needs}): " + (" | ".join(why) or "failed")
              + f"; {without}", file=sys.stderr)
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
          + " with mypyc (two to three minutes)")
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
