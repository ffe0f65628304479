"""DLP: every secret type is found and masked, look-alikes are not, and secrets cannot leave again.

Strategy: the scanner is tested on fixture texts per type (the attack), on JSON nesting and
escapes (the encodings), and on benign look-alikes that must stay untouched (near misses);
the false-positive rate is measured on the Python standard library's sources and asserted
under 1 per 10,000 lines (a correctness bound, not a timing). Exfiltration matching is tested
with the secret sent plainly, embedded, percent-, base64- and hex-encoded, and from another session.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpwall.security.dlp import Fingerprints, Scanner

SCANNER = Scanner()

SECRETS = {
    "aws-access-key": "AKIAQX4PZ7T2LMNB3KQR",
    "github-token": "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
    "openai-key": "sk-proj-Xq3v9LmN2pR7tY1uW5zA8bC4dE6fG0hJ",
    "anthropic-key": "sk-ant-api03-Abc123Def456Ghi789Jkl012Mno345Pqr678Stu901-_xyz",
    "slack-token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe-key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "google-api-key": "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


@pytest.mark.parametrize(("kind", "secret"), sorted(SECRETS.items()))
def test_each_token_format_is_masked_with_its_type(kind: str, secret: str) -> None:
    text, found = SCANNER.redact_text(f"here it is: {secret} (keep it safe)")
    assert secret not in text
    assert f"[REDACTED-{kind}]" in text
    assert [f.type for f in found] == [kind]
    assert text.startswith("here it is: ")
    assert text.endswith(" (keep it safe)")


@pytest.mark.parametrize(("text", "kind", "secret"), [
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8pL3mNvB", "aws-secret-key",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8pL3mNvB"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
     "private-key", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU="),
    ("DATABASE_URL=postgresql://app:S3cr3tPassw0rd@db.prod.example:5432/app", "db-password", "S3cr3tPassw0rd"),
    ("mongodb+srv://admin:Xy9%40pass77@cluster0.example.net/db", "db-password", "Xy9%40pass77"),
    ("Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c", "api-key", "9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c"),
    ('{"password": "Tr0ub4dor&3xyz"}', "secret", "Tr0ub4dor&3xyz"),
    ("export DB_PASSWORD=hK8#mQ2$vL9x", "secret", "hK8#mQ2$vL9x"),
    ("GET /v1/data?api_key=Zx9Qw8Er7Ty6Ui5Op4As3Df2", "api-key", "Zx9Qw8Er7Ty6Ui5Op4As3Df2"),
    ("https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/aBcDeFgHiJkLmNoPqRsTuVwX", "slack-webhook", "T0ABCDEFG"),
    ("blob 3kF9xQ2mZ7vB1nR8tY4wL6pC0sD5gH2jK9aE3uI7oP1", "high-entropy", "3kF9xQ2mZ7vB1nR8tY4wL6pC0sD5gH2jK9aE3uI7oP1"),
    ("card on file: 4111 1111 1111 1111, exp 12/29", "credit-card", "4111 1111 1111 1111"),
    ("pan=4532015112830366.", "credit-card", "4532015112830366"),
    ("amex 3782-822463-10005 ok", "credit-card", "3782-822463-10005"),
])
def test_assignments_urls_keys_and_unknown_formats_are_masked(text: str, kind: str, secret: str) -> None:
    masked, found = SCANNER.redact_text(text)
    assert secret not in masked
    assert kind in {f.type for f in found}


def test_a_database_url_keeps_everything_but_the_password() -> None:
    masked, _ = SCANNER.redact_text("postgresql://app:S3cr3tPassw0rd@db.prod.example:5432/app")
    assert masked == "postgresql://app:[REDACTED-db-password]@db.prod.example:5432/app"


@pytest.mark.parametrize("text", [
    "sk-learn-is-a-machine-learning-library",            # openai prefix, no randomness
    "AKIA1234",                                          # too short for an access key id
    "password = getpass.getpass()",                      # a call, not a literal
    "password: ${DB_PASSWORD}",                          # a reference
    "token = 'your-token-here'",                         # placeholder
    "api_key = os.environ['API_KEY']",
    "postgresql://user:password@localhost/db",           # documentation placeholder
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",  # a digest
    "id 123e4567-e89b-12d3-a456-426614174000",           # a UUID
    "/usr/lib/python3.11/site-packages/SomeModule/SubPackage/file.py",
    "VeryLongIdentifierNameForAClassThatDoesThings2",    # camel-case name with a digit
    "eyJub3QiOiJhIGp3dCJ9",                              # base64 JSON, but no JWT shape
    "The secret to good code is readability.",
    "order 1234567890123456 shipped",                    # no card network starts with 1
    "card 4111111111111112",                             # fails the Luhn check
    "created 1732960000000 ms",                          # a timestamp
    "version 4.1.1111.1111.1111",
    "call +1 415 555 0100 2222",
])
def test_benign_look_alikes_are_left_alone(text: str) -> None:
    assert SCANNER.redact_text(text) == (text, [])


def test_json_inside_text_is_entered_and_escaped_secrets_are_found() -> None:
    inner = json.dumps({"config": {"k": "\u0041KIAQX4PZ7T2LMNB3KQR", "db": "mysql://root:hunter2pass@h/x"}})
    inner = inner.replace("AKIA", "\\u0041KIA")  # an escape hides the key from a plain text scan
    result: dict[str, Any] = {"content": [{"type": "text", "text": inner}],
                              "structuredContent": {"nested": [{"t": inner}]}}
    redacted, found = SCANNER.redact(result, "result")
    assert "AKIAQX4PZ7T2LMNB3KQR" not in json.dumps(redacted)
    assert "\\u0041KIA" not in json.dumps(redacted)
    assert {f.path for f in found} >= {"result.content[0].text{json}.config.k", "result.content[0].text"}
    assert json.loads(redacted["content"][0]["text"])["config"]["k"] == "[REDACTED-aws-access-key]"
    assert result["content"][0]["text"] == inner  # the input is not mutated


def test_an_unchanged_value_is_returned_as_is() -> None:
    value = {"content": [{"type": "text", "text": "nothing here"}]}
    redacted, found = SCANNER.redact(value)
    assert redacted is value
    assert found == []


def test_disabled_types_are_not_masked() -> None:
    scanner = Scanner(disabled=["high-entropy"])
    text = "blob 3kF9xQ2mZ7vB1nR8tY4wL6pC0sD5gH2jK9aE3uI7oP1"
    assert scanner.redact_text(text) == (text, [])


@pytest.mark.parametrize("carrier", [
    lambda s: s,
    lambda s: f"please store {s} in the vault",
    lambda s: f"https://collector.example/?k={s}",
    lambda s: base64.b64encode(f"key={s}".encode()).decode(),
    lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
    lambda s: s.encode().hex(),
    lambda s: "".join(f"%{b:02X}" for b in s.encode()),
])
def test_a_seen_secret_is_found_in_outgoing_arguments_in_any_encoding(carrier: object) -> None:
    secret = "S3cr3tPassw0rd!x9"
    _, found = SCANNER.redact_text(f"DATABASE_URL=postgresql://app:{secret}@db.example/app")
    fps = Fingerprints()
    fps.add("s1", found)
    value = carrier(secret)  # type: ignore[operator]
    assert fps.match("s1", {"arguments": {"body": value}}, SCANNER) == [
        {"type": "db-password", "path": "arguments.body"}]
    assert fps.match("s2", {"arguments": {"body": value}}, SCANNER) == []  # another session never saw it


def test_a_private_key_is_matched_by_its_body_whatever_the_line_breaks() -> None:
    body = "MIIEowIBAAKCAQEAx1x2y3z4w5v6u7t8s9r0q1p2o3n4m5l6k7j8i9h0g1f2e3d4c5b6a7"
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body[:40]}\n{body[40:]}\n-----END RSA PRIVATE KEY-----"
    _, found = SCANNER.redact_text(pem)
    fps = Fingerprints()
    fps.add("s", found)
    assert fps.match("s", {"a": "-----BEGIN RSA PRIVATE KEY-----\\n" + body + "\\n-----END"}, SCANNER)


def test_unrelated_arguments_do_not_match_and_short_secrets_are_not_remembered() -> None:
    fps = Fingerprints()
    _, found = SCANNER.redact_text("postgresql://u:abc@h/x AKIAQX4PZ7T2LMNB3KQR")
    fps.add("s", found)
    assert len(fps) == 1  # 'abc' is too short to fingerprint without false alarms
    assert fps.match("s", {"q": "abc AKIAQX4PZ7T2LMNB3KQ"}, SCANNER) == []


STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"


@pytest.mark.skipif(not STDLIB.is_dir(), reason="standard library sources not found")
def test_false_positives_on_the_standard_library_stay_under_one_per_ten_thousand_lines() -> None:
    lines = hits = 0
    examples: list[str] = []
    for path in sorted(STDLIB.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        lines += text.count("\n") + 1
        for start, end, kind, _ in SCANNER.spans(text):
            hits += 1
            if len(examples) < 10:
                examples.append(f"{path.relative_to(STDLIB)}: {kind}: {text[start:end][:40]!r}")
    rate = hits / lines * 10_000
    print(f"\nDLP on the standard library: {lines} lines, {hits} redactions, {rate:.3f} per 10,000 lines")
    for e in examples:
        print("  ", e)
    assert lines > 100_000
    assert rate < 1.0
