"""One RE2 set over several patterns, for the scans outside the policy engine (DLP, poisoning, the
judge's prefilter, the chain stage).

It uses the policy engine's thin RE2::Set binding (`policy/_re2set.cpp`) when that is built, loaded
from the native build by its file so that `mcpwall inspect` and the other light commands that scan
text do not import the policy engine with it (tests/cli/test_startup.py), and google-re2 otherwise.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

import re2

from mcpwall import _native

_BINDING = "mcpwall.policy._re2set"


def _thin_binding() -> ModuleType | None:
    """The built `_re2set` extension, without importing `mcpwall.policy` (None: not built, stale or off)."""
    loaded = sys.modules.get(_BINDING)
    if loaded is not None:
        return loaded
    if not _native.enabled():
        return None
    folder = _native.BUILD / "mcpwall.policy"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"_re2set{suffix}"
        spec = importlib.util.spec_from_file_location(_BINDING, path) if path.is_file() else None
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except ImportError:  # built against another libre2 than the one installed now
            return None
        sys.modules[_BINDING] = module  # the policy engine's own import finds this one
        return module
    return None


def search_set(patterns: Sequence[str], max_mem: int = 64 << 20) -> Callable[[bytes | str], list[int]]:
    """`Match(data)` of one RE2 set of `patterns`: the indices of those `data` matches, ascending.

    The thin binding's when it is built (it keeps the GIL: google-re2 releases it around every
    match, and with the ledger's writer thread waiting for it a match of a microsecond cost tens),
    else google-re2's. Raises ValueError for a pattern the set refuses.
    """
    patterns = tuple(patterns)
    module = _thin_binding()
    if module is not None:
        with contextlib.suppress(ValueError):  # the system's RE2 refuses one: google-re2's
            native: Callable[[bytes | str], list[int]] = module.compile_set(
                patterns, tuple(range(len(patterns))), max_mem).Match
            return native
    options = re2.Options()
    options.max_mem = max_mem
    rs = re2.Set.SearchSet(options)
    for pattern in patterns:
        rs.Add(pattern)
    rs.Compile()
    match = rs._set.Match

    def slow(data: bytes | str) -> list[int]:
        # google-re2's binding takes a buffer only (the thin one, and the callers, pass str too) and
        # answers in no set order
        return sorted(match(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data))

    return slow


__all__ = ["search_set"]
