"""How a running gateway follows `<home>/run/tokens/` (issue 22: init issues, uninstall revokes).

Strategy: `NamedTokenWatch.poll()` and `AuthStage.identify()` called directly
on a real folder, with the poll interval at zero; each change a person or
`init`/`uninstall` makes (a new file, a deleted file, a file made readable
by others, a bad name, a replaced token) is made on disk, then the next
identify must see it. The gateway's own token never changes. The same
behaviour through a running gateway is in test_named_token_routes.py.
"""

from __future__ import annotations

from pathlib import Path

from mcpwall._token import NamedTokenWatch, write_secret
from mcpwall.stages.auth import AuthStage

GATEWAY = "gateway-token-0123456789abcdefghijklmnop"


def stage(home: Path) -> AuthStage:
    auth = AuthStage({GATEWAY: ""})
    auth.named = NamedTokenWatch(home, interval_s=0.0)
    return auth


def bearer(token: str) -> str:
    return f"Bearer {token}"


def test_a_token_created_after_start_is_accepted_as_its_identity(tmp_path: Path) -> None:
    auth = stage(tmp_path)
    assert auth.identify(bearer("cursor-token-0123456789abcdef")) is None
    write_secret(tmp_path / "run" / "tokens" / "cursor.token", "cursor-token-0123456789abcdef")
    assert auth.identify(bearer("cursor-token-0123456789abcdef")) == "cursor"
    assert auth.identify(bearer(GATEWAY)) == ""


def test_a_deleted_replaced_or_exposed_token_stops_working(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "tokens"
    named = {name: f"{name}-token-0123456789abcdef" for name in ("a", "b", "c")}
    for name, token in named.items():
        write_secret(folder / f"{name}.token", token)
    auth = AuthStage({GATEWAY: "", **{t: name for name, t in named.items()}})  # as build() loads them
    auth.named = NamedTokenWatch(tmp_path, interval_s=0.0)
    assert auth.named.poll() is None  # nothing changed since it was made
    assert auth.identify(bearer(named["a"])) == "a"
    (folder / "a.token").unlink()
    write_secret(folder / "b.token", "b-token-replaced-0123456789")
    (folder / "c.token").chmod(0o644)
    assert auth.identify(bearer(named["a"])) is None
    assert auth.identify(bearer(named["b"])) is None
    assert auth.identify(bearer("b-token-replaced-0123456789")) == "b"
    assert auth.identify(bearer(named["c"])) is None  # readable by others: refused, as at start
    assert auth.identify(bearer(GATEWAY)) == ""


def test_a_file_whose_name_is_not_an_identity_is_left_out(tmp_path: Path) -> None:
    auth = stage(tmp_path)
    write_secret(tmp_path / "run" / "tokens" / "bad name.token", "bad-token-0123456789abcdef")
    write_secret(tmp_path / "run" / "tokens" / "good.token", "good-token-0123456789abcdef")
    assert auth.identify(bearer("bad-token-0123456789abcdef")) is None
    assert auth.identify(bearer("good-token-0123456789abcdef")) == "good"


def test_the_folder_is_looked_at_no_more_than_once_per_interval(tmp_path: Path) -> None:
    watch = NamedTokenWatch(tmp_path, interval_s=3600.0)
    write_secret(tmp_path / "run" / "tokens" / "late.token", "late-token-0123456789abcdef")
    assert watch.poll() is None  # within the interval: not looked at
