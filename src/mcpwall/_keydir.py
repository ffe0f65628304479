"""Where the upstream token store's keys live: outside the gateway's home.

`mcpwall.oauth._store` encrypts the upstream OAuth grants it keeps in the home with a key kept
here, and the self-protection guard (`mcpwall._protected`) refuses calls that name this folder,
as it does the home. A module of its own so that the guard (and `simulate`, which starts without
any HTTP code) need not import the OAuth package to know the path.
"""

from __future__ import annotations

import os
from pathlib import Path

KEY_DIR_ENV = "MCPWALL_KEY_DIR"


def key_dir() -> Path:
    """`$MCPWALL_KEY_DIR`, else `$XDG_CONFIG_HOME/mcpwall/keys` (default `~/.config/mcpwall/keys`)."""
    value = os.environ.get(KEY_DIR_ENV, "").strip()
    if value:
        return Path(value).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(config).expanduser() if config and Path(config).is_absolute() else Path.home() / ".config"
    return base / "mcpwall" / "keys"


__all__ = ["KEY_DIR_ENV", "key_dir"]
