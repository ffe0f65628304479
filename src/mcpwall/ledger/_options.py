"""The `ledger:` block of policy.yaml, checked once with the key named in every error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from mcpwall.ledger._errors import LedgerConfigError

#: policy.yaml `ledger:` keys -> LedgerOptions fields
_SECTION_KEYS = {"durability": "durability", "flushIntervalMs": "flush_interval_ms", "batchRows": "batch_rows",
                 "bodies": "bodies", "maxBodyBytes": "max_body_bytes", "previewChars": "preview_chars",
                 "maxSizeMb": "max_size_mb", "strictTimeoutMs": "strict_timeout_ms", "maxPending": "max_pending",
                 "anchor": "anchor"}


@dataclass(frozen=True)
class LedgerOptions:
    """How the ledger records; the `ledger:` block of policy.yaml (camelCase there)."""

    #: "batched": committed within 50 ms, off the hot path; "strict": committed before the answer is sent
    durability: str = "batched"
    flush_interval_ms: int = 50
    batch_rows: int = 500
    #: store full request/response bodies in event_body_blobs
    bodies: bool = True
    max_body_bytes: int = 1 << 20
    preview_chars: int = 512
    #: cap on the SQLite file (PRAGMA max_page_count); writes beyond it fail as "disk full"
    max_size_mb: float | None = None
    strict_timeout_ms: int = 5000
    max_pending: int = 200_000
    #: the head anchor's directory (`_anchor.anchor_dir`); None: $MCPWALL_ANCHOR_DIR or the XDG state dir; "off"
    anchor: str | None = None

    @classmethod
    def from_section(cls, section: Mapping[str, Any] | None) -> LedgerOptions:
        """Validate a policy's `ledger:` block (its `url` and `enabled` keys are read by the caller)."""
        given = dict(section or {})
        given.pop("url", None)
        given.pop("enabled", None)
        unknown = sorted(set(given) - set(_SECTION_KEYS))
        if unknown:
            raise LedgerConfigError(f"ledger: unknown key(s) {', '.join(unknown)} "
                                    f"(known: url, enabled, {', '.join(_SECTION_KEYS)})")
        values: dict[str, Any] = {}
        types = {f.name: f.type for f in fields(cls)}
        for key, value in given.items():
            name = _SECTION_KEYS[key]
            values[name] = _check(key, value, str(types[name]))
        options = cls(**values)
        anchor = options.anchor
        if anchor is not None and anchor.strip().lower() not in ("off", "none", "false", "no", "0") \
                and not Path(anchor.strip()).expanduser().is_absolute():
            raise LedgerConfigError(f"ledger.anchor must be an absolute directory outside the home (or off), "
                                    f"not {anchor!r}")
        if options.durability not in ("batched", "strict"):
            raise LedgerConfigError(f"ledger.durability must be 'batched' or 'strict', not {options.durability!r}")
        return options


def _check(key: str, value: Any, type_name: str) -> Any:
    if "bool" in type_name:
        if isinstance(value, bool):
            return value
    elif "str" in type_name:
        if isinstance(value, str) and value.strip():
            return value
        if value is False:
            return "off"
    elif "float" in type_name:
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
        if value is None:
            return None
    elif isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise LedgerConfigError(f"ledger.{key}: {value!r} is not a valid value ({type_name.replace(' | None', '')}"
                            f"{', > 0' if 'bool' not in type_name and 'str' not in type_name else ''})")


__all__ = ["LedgerOptions"]
