"""Honeytokens: decoys look real, every part gives itself away when reused, and the registry persists.

Strategy: check the generated formats against the real ones (GitHub's CRC32 checksum, AWS's
base32 key ids), then feed the registry requests carrying a decoy part plainly, inside text,
URL-encoded, base64-encoded and inside a database URL (the attack and its encodings), and
look-alikes that must not match (a different key of the same shape, a prefix). Persistence:
a second registry loading the same StateStore detects what the first planted.
"""

from __future__ import annotations

import base64
import re
import zlib
from urllib.parse import quote

import pytest

from mcpwall.security.honeytokens import NAMESPACE, Registry, digest, generate, github_token, render
from mcpwall.state import MemoryStateStore

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def test_decoys_have_the_real_formats() -> None:
    aws, gh, db = generate("aws"), generate("github"), generate("database")
    key_id = dict(aws.parts)["aws-access-key"]
    assert re.fullmatch(r"AKIA[A-Z2-7]{16}", key_id)
    assert re.fullmatch(r"[A-Za-z0-9+/]{40}", dict(aws.parts)["aws-secret-key"])
    token = dict(gh.parts)["github-token"]
    body, check = token[4:34], token[34:]
    n = zlib.crc32(body.encode())
    digits = ""
    while n:
        n, r = divmod(n, 62)
        digits = _B62[r] + digits
    assert check == digits.rjust(6, "0")
    assert re.fullmatch(r"postgresql://\w+:[A-Za-z0-9]{20}@[a-z]+-[0-9a-f]{8}\.[a-z]+\.internal:5432/\w+",
                        dict(db.parts)["db-url"])
    assert "do not commit" in render([aws, gh, db])
    assert github_token() != github_token()


def test_an_unknown_decoy_type_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown honeytoken type"):
        generate("kerberos")


def _planted() -> tuple[Registry, dict[str, str], MemoryStateStore]:
    store = MemoryStateStore()
    registry = Registry(store)
    decoys = registry.decoys_for("session-1", "fs", "read_file", ["aws", "github", "database"])
    parts = {name: value for d in decoys for name, value in d.parts}
    return registry, parts, store


@pytest.mark.parametrize(("part", "carrier"), [
    ("aws-access-key", lambda v: v),
    ("aws-access-key", lambda v: f"aws configure set aws_access_key_id {v}"),
    ("aws-secret-key", lambda v: f"secret={v}"),
    ("github-token", lambda v: f"Authorization: token {v}."),
    ("github-token", lambda v: quote(f"t={v}", safe="")),
    ("github-token", lambda v: base64.b64encode(v.encode()).decode()),
    ("db-url", lambda v: f"psql '{v}'"),
    ("db-password", lambda v: f"PGPASSWORD={v} psql -h db"),
    ("db-host", lambda v: f"nc -z {v} 5432"),
])
def test_every_part_of_a_decoy_is_detected_in_any_spelling(part: str, carrier: object) -> None:
    registry, parts, _ = _planted()
    value = carrier(parts[part])  # type: ignore[operator]
    hits = registry.find({"name": "x", "arguments": {"cmd": value}})
    assert hits, value
    assert hits[0].path == "arguments.cmd"
    assert hits[0].record["server"] == "fs"
    assert hits[0].record["session"] == "session-1"
    assert parts[part] not in str(hits[0].alert())  # the alert never carries the decoy


def test_look_alikes_of_a_decoy_are_not_alerts() -> None:
    registry, parts, _ = _planted()
    key_id = parts["aws-access-key"]
    other = key_id[:-1] + ("A" if key_id[-1] != "A" else "B")
    assert registry.find({"a": other}) == []
    assert registry.find({"a": key_id[:-2]}) == []
    assert registry.find({"a": "AKIAIOSFODNN7EXAMPLE and ordinary text"}) == []


def test_a_session_sees_the_same_decoys_again_and_the_registry_grows_per_session() -> None:
    registry, _, _ = _planted()
    first = registry.decoys_for("session-1", "fs", "read_file", ["aws"])
    again = registry.decoys_for("session-1", "fs", "list_dir", ["aws"])
    assert first is again
    registry.decoys_for("session-2", "fs", "read_file", ["aws"])
    assert len(registry) == 6 + 2  # session-1: aws (2 parts) + github (1) + database (3); session-2: aws


def test_detection_survives_a_restart_through_the_state_store() -> None:
    _, parts, store = _planted()
    assert digest(parts["github-token"]) in store.all_state(NAMESPACE)
    assert parts["github-token"] not in str(store.all_state(NAMESPACE))  # only hashes are stored
    fresh = Registry()
    assert fresh.find({"a": parts["github-token"]}) == []
    assert fresh.load(store) == 6
    assert fresh.find({"a": parts["github-token"]})[0].part == "github-token"
