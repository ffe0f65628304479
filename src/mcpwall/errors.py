"""The exception tree of mcpwall.

Policy: every package raises a subclass of `MCPWallError` and translates
foreign exceptions at its boundary with `raise ... from`. Only `mcpwall.cli`
turns these into messages and exit codes; `UsageError`-like families map to
exit 2, everything else to exit 1.
"""

from __future__ import annotations


class MCPWallError(Exception):
    """Base of every error mcpwall raises on purpose."""

    #: Exit code the CLI uses when this error ends a command.
    exit_code: int = 1


class ConfigError(MCPWallError):
    """A configuration or input file is unusable; the user must fix it."""

    exit_code = 2


class PolicyError(ConfigError):
    """A policy file is invalid; names the file, line and rule id where known."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 rule_id: str | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.rule_id = rule_id
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The single line a user sees: `file:line: rule 'id': message`."""
        where = ""
        if self.file:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
            where += ": "
        rule = f"rule '{self.rule_id}': " if self.rule_id else ""
        return f"{where}{rule}{self.message}"


__all__ = ["ConfigError", "MCPWallError", "PolicyError"]
