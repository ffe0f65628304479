"""Printing a rich table that never cuts a word: on a terminal, in a pipe and in a CI log.

rich gives a console that is not a terminal 80 columns and folds any cell
that does not fit, so `mcpwall check | cat` printed `shell-interprete` / `r`
and a CI log could not be searched for a rule id. `print_whole` gives each
column at least the width of its longest word (a row may wrap between words,
never inside a name or an id) and, when stdout is not a terminal and
$COLUMNS is not set, prints the table at its natural width: one line a row,
which is what log viewers and grep read best. An explicit $COLUMNS is
honoured (rows then wrap between words).
"""

from __future__ import annotations

import os
from typing import Any


def _plain(cell: Any) -> str:
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return ""


def table_width(console: Any, table: Any) -> int:
    """The width to print `table` at: the terminal's (or $COLUMNS), else its natural width."""
    if console.is_terminal or os.environ.get("COLUMNS", "").strip().isdigit():
        return int(console.width)
    unbounded = console.options.update(width=100_000)  # measure() is capped at the console's width
    return max(int(console.width), int(console.measure(table, options=unbounded).maximum))


def print_whole(console: Any, table: Any) -> None:
    """Print `table` with no word folded: each column as wide as its longest word, pipes at natural width."""
    for column in table.columns:
        words = [w for cell in column.cells for w in _plain(cell).split()] + _plain(column.header).split()
        column.min_width = max(column.min_width or 0, max((len(w) for w in words), default=0))
    width, console_width = table_width(console, table), console.width
    console.width = width  # print(width=) is capped at the console's own width; this is not
    try:
        console.print(table, crop=False)
    finally:
        console.width = console_width


__all__ = ["print_whole", "table_width"]
