"""The wheel's build hook: a wheel carries the compiled hot path where it was built with a compiler.

hatchling runs this before it builds a wheel (`[tool.hatch.build.targets.wheel.hooks.custom]`
in pyproject.toml), whoever asks for the wheel: `pip wheel .`, `python -m build`, `pipx install
.`, `uv tool install .`. Where a C compiler and Python's headers are, it compiles the modules of
`mcpwall._native` (mypyc, and the optional C/C++ extensions) with `tools/build_native.py` and puts
them in the wheel as `mcpwall/_native_build/`, with the stamp of the sources they were built from;
the wheel is then tagged for this interpreter and platform (cp311-cp311-linux_x86_64). Where
there is no compiler, with `MCPWALL_PURE=1`, or when the build fails, the wheel is the pure
`py3-none-any` one and mcpwall runs as Python: same behaviour, slower. A build the developer's
`make native` left in the tree is reused when it matches the sources and this interpreter.

Why at build time, and not at first run into a user cache: it is what mypyc-compiled tools do
(black and mypy ship compiled wheels, and fall back to pure ones), a pipx or uv install stays a
plain install of a wheel, the first `mcpwall --help` (or `uvx mcpwall`) does not pay a
minute of compiling, and mypy, setuptools and a compiler are needed only where wheels are built,
never at run time. Editable installs (`pip install -e .`, `make run`) never compile here: they run
the tree, where `make native` builds.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: What compiling needs from the dev extra besides the runtime dependencies (mypyc type-checks the
#: modules against them): mypy, pinned there as the generated code depends on it, setuptools, the stubs.
FROM_DEV = ("mypy", "setuptools", "types-")


def _build_native(root: str) -> ModuleType:
    sys.path.insert(0, str(Path(root, "tools")))
    try:
        import build_native
    finally:
        sys.path.pop(0)
    return build_native


def _editable_request() -> bool:
    """Whether hatchling is asking for an editable build's requirements: it asks every hook for its
    dependencies without saying which build they are for, and an editable build compiles nothing."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "get_requires_for_build_editable":
            return True
        frame = frame.f_back
    return False


class NativeBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def _wanted(self) -> bool:
        """Whether this build should carry compiled modules: a compiler is here and nobody said pure."""
        if os.environ.get("MCPWALL_PURE", "") not in ("", "0"):
            return False
        return bool(_build_native(self.root).can_compile())

    def dependencies(self) -> list[str]:
        """What the build environment needs to compile: nothing unless it will."""
        if _editable_request() or not self._wanted() or _build_native(self.root).current():
            return []
        dev = self.metadata.core.optional_dependencies.get("dev", [])
        return [*self.metadata.core.dependencies, *(d for d in dev if d.startswith(FROM_DEV))]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable" or not self._wanted():
            return
        native = _build_native(self.root)
        if native.current():
            built = native._native.BUILD
        else:
            self._tmp = tempfile.mkdtemp(prefix="mcpwall-wheel-native-")
            built = Path(self._tmp, "_native_build")
            print(
                "mcpwall wheel: compiling the hot path with mypyc (about a minute; MCPWALL_PURE=1 skips it)",
                file=sys.stderr,
            )
            try:
                native.build(built)
            except Exception as exc:  # any failure leaves the pure wheel, which works everywhere
                print(
                    f"mcpwall wheel: native build failed ({exc}); building the pure-Python wheel",
                    file=sys.stderr,
                )
                return
        stamp = json.loads(Path(built, "sources.json").read_text(encoding="utf-8"))
        if stamp.get("sources") != native._native.source_hashes():
            # mcpwall would ignore a build that does not match the sources beside it: leave it out
            print(
                "mcpwall wheel: the sources changed while they were compiled; building the pure-Python wheel",
                file=sys.stderr,
            )
            return
        build_data["force_include"][str(built)] = "mcpwall/_native_build"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
