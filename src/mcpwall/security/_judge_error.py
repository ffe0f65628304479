"""The judge's one error, kept out of the compiled `judge` module.

mypyc builds a compiled module's classes without their docstrings (`JudgeError.__doc__` came
out empty, tests/test_errors.py), and every error of the family carries one of its own; this
module stays Python so the class keeps it. `judge` raises and re-exports it.
"""

from __future__ import annotations

from mcpwall.errors import InternalError


class JudgeError(InternalError):
    """The remote judge gave no usable answer (transport, status, or format)."""


__all__ = ["JudgeError"]
