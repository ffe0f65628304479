"""The upstream token store at rest (issue 26 item 2): encrypted, keyed outside the home, private.

Strategy: the real store on real files (the Fernet file backend: this machine has no OS keyring,
and `keyring` reports its `fail` backend, which the store must not take for one). Each test gives
the store its own key directory.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import keyring
import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.oauth import OWNER, SERVICE, Grant, TokenStore, TokenStoreError, authorization_state
from mcpwall.oauth._store import key_dir, server_authorization, usable_keyring

SECRET = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXVwc3RyZWFtLXRva2Vu.sig-Zq8"


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MCPWALL_KEY_DIR", str(tmp_path / "elsewhere" / "keys"))
    monkeypatch.setenv("MCPWALL_KEYRING", "off")
    return tmp_path / "elsewhere" / "keys"


def test_a_grant_is_stored_encrypted_with_its_key_outside_the_home(tmp_path: Path, keys: Path) -> None:
    home = tmp_path / "home"
    TokenStore(home).put("notion", "alice", Grant(access_token=SECRET, refresh_token="rt-" + SECRET[:20],
                                                  expires_at=time.time() + 3600, scope="read"))
    for path in home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
            assert path.stat().st_mode & 0o077 == 0, path
    (key,) = keys.iterdir()
    assert key.stat().st_mode & 0o777 == 0o600
    assert not key.is_relative_to(home)
    again = TokenStore(home).get("notion", "alice")
    assert again is not None
    assert again.access_token == SECRET
    # the index names what is held without a secret
    index = json.loads((home / "run" / "upstream-auth.json").read_text())
    assert index["notion"]["alice"]["scope"] == "read"
    assert SECRET not in json.dumps(index)


def test_grants_are_per_principal_and_a_logout_forgets_only_its_own(tmp_path: Path, keys: Path) -> None:
    store = TokenStore(tmp_path / "home")
    store.put("s", "alice", Grant(access_token="a-token"))
    store.put("s", "bob", Grant(access_token="b-token"))
    store.put("s", OWNER, Grant(access_token="o-token"))
    assert store.get("s", "carol") is None
    assert store.delete("s", "alice")
    assert store.get("s", "alice") is None
    bob = store.get("s", "bob")
    assert bob is not None
    assert bob.access_token == "b-token"
    assert set(store.index()["s"]) == {"bob", OWNER}


def test_a_store_whose_key_is_gone_or_other_says_so_and_gives_no_token(tmp_path: Path, keys: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    TokenStore(home).put("s", OWNER, Grant(access_token=SECRET))
    monkeypatch.setenv("MCPWALL_KEY_DIR", str(tmp_path / "other-keys"))
    with pytest.raises(TokenStoreError, match=r"key .* is gone"):
        TokenStore(home).get("s", OWNER)
    other = tmp_path / "other-keys"
    other.mkdir()
    (other / next(keys.iterdir()).name).write_bytes(b"x" * 44)
    (other / next(keys.iterdir()).name).chmod(0o600)
    with pytest.raises(TokenStoreError, match=r"not a Fernet key|does not decrypt"):
        TokenStore(home).get("s", OWNER)


def test_a_key_readable_by_others_is_refused(tmp_path: Path, keys: Path) -> None:
    home = tmp_path / "home"
    TokenStore(home).put("s", OWNER, Grant(access_token=SECRET))
    next(keys.iterdir()).chmod(0o644)
    with pytest.raises(TokenStoreError, match="readable by others"):
        TokenStore(home).get("s", OWNER)


def test_the_default_key_dir_is_under_xdg_config_home_not_the_gateway_home(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    monkeypatch.delenv("MCPWALL_KEY_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert key_dir() == tmp_path / "cfg" / "mcpwall" / "keys"


def test_a_keyring_that_stores_nothing_is_not_taken_for_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPWALL_KEYRING", raising=False)
    backend = keyring.get_keyring()
    if type(backend).__module__.startswith("keyring.backends.fail"):
        assert usable_keyring() is None
    monkeypatch.setenv("MCPWALL_KEYRING", "off")
    assert usable_keyring() is None


def test_status_says_none_authorized_until_or_login_required() -> None:
    now = 1_000_000.0
    assert authorization_state(None, now) == "none"
    assert authorization_state({"expires_at": now + 60, "refreshable": False}, now).startswith("authorized until")
    assert authorization_state({"expires_at": now - 1, "refreshable": False}, now) == "login required"
    held = {OWNER: {"expires_at": now + 60, "refreshable": True}, "bob": {"expires_at": now - 5}}
    summary = server_authorization(held, None, now)
    assert summary["state"].startswith("authorized until")
    assert summary["principals"] == {"bob": "login required"}
    assert server_authorization({SERVICE: {"expires_at": None}}, "upstream 'x' requires authorization: run",
                                now)["state"] == "login required"


def test_no_policy_lets_an_agent_read_the_token_stores_key(tmp_path: Path, keys: Path) -> None:
    """The key dir is outside the home, and in the gateway's protected set like the home."""
    TokenStore(tmp_path / "home").put("s", OWNER, Grant(access_token=SECRET))
    (key,) = keys.iterdir()
    for path in (str(key), str(keys), str(keys.parent / "keys" / ".." / "keys" / key.name)):
        result = CliRunner().invoke(cli, ["simulate", "read_file", "--args", json.dumps({"path": path}), "--json",
                                          "--home", str(tmp_path / "home")])
        assert result.exit_code == 0, result.output
        decision = json.loads(result.output)
        assert (decision["action"], decision["rule_ids"]) == ("deny", ["mcpwall.self-protection"]), path
