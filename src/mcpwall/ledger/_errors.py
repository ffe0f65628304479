"""The ledger's exceptions.

Policy: backend exceptions (sqlite3, psycopg) never leave the ledger package;
they are translated at the boundary into `LedgerUnavailable` (the database
cannot be reached or written right now: retry later, fail closed meanwhile)
or `LedgerError` (anything else). A ledger that cannot be opened because of
its configuration raises `LedgerConfigError` (exit 2 in the CLI).
"""

from __future__ import annotations

from mcpwall.errors import ConfigError, MCPWallError


class LedgerError(MCPWallError):
    """The ledger failed in a way the caller cannot fix by waiting."""


class LedgerUnavailable(LedgerError):
    """The database cannot be reached or written (disk full, server down, locked)."""


class LedgerConfigError(ConfigError):
    """The ledger URL, key or options are unusable."""


__all__ = ["LedgerConfigError", "LedgerError", "LedgerUnavailable"]
