"""Options and output helpers shared by the sub-commands."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

F = TypeVar("F", bound=Callable[..., Any])


def default_home() -> Path:
    """`$MCPWALL_HOME`, else `~/.mcpwall`."""
    env = os.environ.get("MCPWALL_HOME")
    return Path(env).expanduser() if env else Path.home() / ".mcpwall"


def home_option(func: F) -> F:
    """Every command takes `--home DIR` (the state directory)."""
    return click.option(
        "--home", "home", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="State directory (default: $MCPWALL_HOME or ~/.mcpwall).",
    )(func)


def resolve_home(home: Path | None) -> Path:
    return (home or default_home()).expanduser()


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(func)


def print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())
    sys.stdout.write("\n")
    sys.stdout.flush()


def policy_path_for(home: Path | None, explicit: Path | None) -> Path | None:
    """The policy a command should use: `--policy`, else `<home>/policy.yaml` if present, else None."""
    if explicit is not None:
        return explicit
    candidate = resolve_home(home) / "policy.yaml"
    return candidate if candidate.exists() else None


def load_checked_engine(path: Path | None) -> Any:
    """The policy engine for `path` (see `policy_path_for`), with its other sections (`dlp:`,
    `ledger:`, `honeytokens:`, `rbac:`, `stages:`) checked as the gateway would check them, so
    that `simulate` does not call a file good that `proxy` then refuses (exit 2, file:line). The
    files are read without pydantic where they are valid as written (`policy._plain`, issue 29)."""
    from mcpwall.policy import load_engine

    engine = load_engine(path, plain=True)
    source = engine.compiled.source
    sections = dict(source.sections)
    if not sections:
        # nothing of the file's for a stage to refuse: every stage builds from its defaults (a test keeps
        # it so), and importing them all was most of a `simulate`'s start-up (issue 29)
        return engine
    from mcpwall.errors import ConfigError
    from mcpwall.policy._loader import locate_section
    from mcpwall.stages import default_stages

    if isinstance(sections.get("ledger"), dict):
        # checked, not opened: a decision needs no ledger (and a PostgreSQL one may not be reachable)
        sections["ledger"] = {k: v for k, v in sections["ledger"].items() if k != "url"}
    try:
        default_stages(sections, None)  # no settings: nothing is opened or started
    except ConfigError as exc:
        located = locate_section(source.files, str(exc))
        raise located or exc from exc
    return engine


__all__ = ["default_home", "home_option", "json_option", "load_checked_engine", "policy_path_for", "print_json",
           "resolve_home"]
