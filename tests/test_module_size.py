"""The gateway core stays in rooms a newcomer can read (issue 23): no module of `mcpwall.proxy`
over 400 lines. A module that grows past it is split by responsibility, not trimmed of comments."""

from __future__ import annotations

from pathlib import Path

PROXY = Path(__file__).resolve().parents[1] / "src" / "mcpwall" / "proxy"
LIMIT = 400


def test_no_proxy_module_is_over_the_limit() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in sorted(PROXY.glob("*.py"))}
    assert sizes, "no modules found: the path moved"
    over = {name: n for name, n in sizes.items() if n > LIMIT}
    assert over == {}, f"over {LIMIT} lines: {over}"
