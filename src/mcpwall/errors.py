"""The exception tree of mcpwall.

Policy: every package raises a subclass of `MCPWallError` and translates
foreign exceptions at its boundary with `raise ... from`. Only `mcpwall.cli`
turns these into messages and exit codes; `UsageError`-like families map to
exit 2, everything else to exit 1.

    MCPWallError                      an error mcpwall raises on purpose (exit 1)
      ConfigError                     a file or input the user must fix (exit 2)
        PolicyError                   a policy file, with file, line and rule id
      InternalError                   answered where it is raised, never shown by the CLI
        ProtocolError                 (mcpwall.protocol) a message that cannot be relayed
        UpstreamError                 (proxy) the upstream could not answer a request
        StateUnavailable              (shared) the replicas' Redis cannot be reached
        FrameError                    (relay) the peer broke the framed wire format
        WireError                     (isolation) the aggregator's framing broke
        JudgeError                    (security.judge) the remote judge gave no usable answer
        FetchError, URLRefused        (builtin) a fetch failed, or its URL may not be fetched
        ReadProblem, NotEditable,     (discovery) a config file cannot be used, or edited in
        JsoncError                      place; JSON(C) that does not parse
      TransportError, LedgerError, ApprovalError, RelayError, AdminCallError, AddressUnavailable:
                                      their packages' own (transports, ledger, approvals, relay,
                                      admin, cli), shown by the CLI as one line

An `InternalError` is answered by the code that raised it: a JSON-RPC error to the client, a
closed channel, a stage that fails closed, a failed tool call, a finding about a file. The CLI
and the HTTP APIs (dashboard, admin) let one through like any other exception: one that reaches
them is a bug and shows as one (a traceback, a 500), not as the one line of a user's mistake.
StateUnavailable is a RuntimeError too, and JsoncError a ValueError, as their callers catch them.
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


class InternalError(MCPWallError):
    """Raised for mcpwall's own code to answer where it happens, not for a person to read."""


__all__ = ["ConfigError", "InternalError", "MCPWallError", "PolicyError"]
