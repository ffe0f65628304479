"""The secret patterns DLP looks for, and the checks that keep false positives low.

Each pattern names a type (the `<type>` of `[REDACTED-<type>]`), the regex
group that holds the secret (only that span is masked, so `password = "..."`
stays readable), an optional validator, and literal hints: a pattern runs
only when one of its hints occurs in the text, which keeps the common case
(text without any secret-looking marker) to a few substring searches.

Validators are where false positives are decided. Generic shapes (an
assignment to a name containing `password`, a long base64-looking token) are
accepted only when the value looks random: several character classes, enough
Shannon entropy, not a placeholder, not an identifier, not a hex digest and not
base64-encoded prose. bench/dlp_false_positives.py (tests/security/test_dlp_corpus.py)
measures the rate on the Python standard library's sources.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from dataclasses import dataclass


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _classes(text: str) -> int:
    lower = upper = digit = other = 0
    for ch in text:
        if ch.islower():
            lower = 1
        elif ch.isupper():
            upper = 1
        elif ch.isdigit():
            digit = 1
        else:
            other = 1
    return lower + upper + digit + other


_PLACEHOLDER_WORDS = ("xxxx", "***", "...", "changeme", "change_me", "placeholder", "example", "your",
                      "dummy", "sample", "redacted", "insert", "replace", "secret_here", "secrethere")
_PLACEHOLDER_MARKS = ("<", ">", "${", "{{", "%(", "%s")
_PLACEHOLDER_EXACT = frozenset({"none", "null", "true", "false", "password", "passwd", "secret", "token", "undefined"})
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:[.:][A-Za-z_][A-Za-z0-9_]*)+(?:\(\))?$")
_WORDY = re.compile(r"[a-z]{5,}|[A-Z][a-z]{4,}|[A-Z]{5,}")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


def is_placeholder(value: str) -> bool:
    """Documentation values (`your-token-here`, `<password>`, `${SECRET}`, `xxxx`), not secrets."""
    low = value.lower()
    return (low in _PLACEHOLDER_EXACT or value.startswith("$") or len(set(value)) <= 3
            or any(m in value for m in _PLACEHOLDER_MARKS) or any(w in low for w in _PLACEHOLDER_WORDS))


def looks_random(value: str, min_len: int = 16) -> bool:
    """A credential-like value: long enough, mixed, high entropy, not a word, name or digest."""
    if len(value) < min_len or is_placeholder(value) or _IDENTIFIER.match(value) or _UUID.match(value):
        return False
    if _HEX.match(value):
        return len(value) >= 32 and entropy(value) >= 3.0 and not value.isdigit() and min_len <= 16
    classes = _classes(value)
    if classes < 2 or not any(ch.isdigit() for ch in value):
        return False
    # Words strung together (`SomeLongClassName1`, `get_user_token_2`) are names, not keys.
    wordy = sum(len(m) for m in _WORDY.findall(value))
    if wordy > len(value) * 0.6:
        return False
    return entropy(value) >= (3.0 if len(value) < 24 else 3.5)


def looks_like_password(value: str) -> bool:
    """A literal assigned to a password-like name: shorter values allowed, stricter mix."""
    if len(value) < 8 or is_placeholder(value) or _IDENTIFIER.match(value):
        return False
    if value.isalpha() or value.isdigit() or " " in value:
        return False
    if _classes(value) < 3 and not looks_random(value, 12):
        return False
    return entropy(value) >= 2.8


#: Leading bytes of file formats whose base64 looks random but is data, not a key.
_FILE_MAGIC = (b"\x1f\x8b", b"PK\x03\x04", b"\x89PNG", b"bplist", b"GIF8", b"\xff\xd8\xff", b"%PDF", b"BZh")
FILE_MAGIC = _FILE_MAGIC


def _b64_text(value: str) -> bool:
    """True when a base64-looking token decodes to readable text or a known file format (data, not a key)."""
    raw = value.replace("-", "+").replace("_", "/")
    raw += "=" * (-len(raw) % 4)
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return False
    if not data:
        return False
    if data.startswith(_FILE_MAGIC):
        return True
    try:
        chars = data.decode("utf-8")
    except UnicodeDecodeError:
        chars = ""
    if chars and sum(ch.isprintable() or ch in "\t\r\n" for ch in chars) / len(chars) > 0.9:
        return True
    printable = sum(1 for b in data if 32 <= b < 127 or b in (9, 10, 13))
    return printable / len(data) > 0.9


def high_entropy(value: str) -> bool:
    """A long token with key-like randomness (the catch-all for unknown key formats)."""
    stripped = value.rstrip("=")
    if len(stripped) < 32 or len(stripped) > 512 or _HEX.match(stripped) or is_placeholder(stripped):
        return False
    if not (any(c.islower() for c in stripped) and any(c.isupper() for c in stripped)
            and sum(c.isdigit() for c in stripped) >= 3):
        return False
    if stripped.count("/") >= 2 and not any(c in stripped for c in "+="):
        # paths and URL paths: mixed case and digits, but segments of words
        segments = [s for s in stripped.split("/") if s]
        if all(len(s) < 24 for s in segments):
            return False
    if stripped.count("_") + stripped.count("-") >= 3 and sum(len(m) for m in _WORDY.findall(stripped)) > 12:
        return False
    if sum(len(m) for m in _WORDY.findall(stripped)) > len(stripped) * 0.35:
        return False
    if "--" in stripped or sum(1 for part in stripped.split("-") if len(part) >= 3 and part.isalpha()) >= 2:
        return False  # punycode and dashed names
    if entropy(stripped) < 4.5:
        return False
    return not _b64_text(stripped)


def _jwt(value: str) -> bool:
    head = value.split(".", 1)[0]
    head += "=" * (-len(head) % 4)
    try:
        decoded = base64.urlsafe_b64decode(head).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return decoded.startswith("{") and ('"alg"' in decoded or '"typ"' in decoded)


def _openai(value: str) -> bool:
    body = value.split("-", 2)[-1] if value.startswith(("sk-proj-", "sk-svcacct-", "sk-admin-")) else value[3:]
    return looks_random(body, 20)


def _db_password(value: str) -> bool:
    return len(value) >= 3 and not is_placeholder(value) and value.lower() not in {"pass", "pwd", "user"}


#: Card networks: their number prefixes and lengths (Visa, Mastercard, American Express, Discover).
_CARD_NETWORKS = ((re.compile(r"4"), (13, 16, 19)), (re.compile(r"5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)"), (16,)),
                  (re.compile(r"3[47]"), (15,)), (re.compile(r"6(?:011|5)"), (16, 17, 18, 19)))


def _card_number(value: str) -> bool:
    """A payment card number: a known network's prefix and length, one kind of separator, Luhn-valid
    (an order number or a timestamp of the same length fails one of the three)."""
    separators = {c for c in value if not c.isdigit()}
    digits = [int(c) for c in value if c.isdigit()]
    if len(separators) > 1:
        return False
    head = "".join(map(str, digits[:4]))
    if not any(prefix.match(head) and len(digits) in lengths for prefix, lengths in _CARD_NETWORKS):
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@dataclass(frozen=True, slots=True)
class SecretPattern:
    """One kind of secret: where it is in a match, and how to tell it from a look-alike."""

    type: str
    regex: re.Pattern[str]
    #: an RE2 pattern matching (at least) wherever `regex` can match; the scanner runs
    #: `regex` only on texts where this prefilter matched (one RE2 set pass for all patterns)
    prefilter: str
    #: the regex group that is the secret (0: the whole match)
    group: int = 0
    check: Callable[[str], bool] | None = None
    #: find candidates with RE2 over the UTF-8 bytes instead of Python `re` (ASCII-only patterns
    #: whose Python form is slow, e.g. long character-class runs)
    bytes_finder: bool = False
    #: how far past (window) and before (lookback) a prefilter match the full match may extend, in characters
    window: int = 300
    lookback: int = 48


_KEY_NAMES = (r"api[_-]?key|apikey|x-api-key|api[_-]?token|access[_-]?token|auth[_-]?token|secret[_-]?key|"
              r"client[_-]?secret|private[_-]?token")
_DB_SCHEMES = (r"postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|oracle|"
               r"cockroachdb|clickhouse|jdbc:[a-z]+")
_PW_NAMES = r"secret|password|passwd|pwd|token|credential|private[_-]?key"
_ENV_NAMES = r"SECRET|PASSWORD|PASSWD|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?"
_URL_KEYS = (r"access_token|id_token|refresh_token|token|api[_-]?key|apikey|key|secret|client_secret|"
             r"password|pwd|sig|signature|auth")

PATTERNS: tuple[SecretPattern, ...] = (
    # mcp-seatbelt's six
    SecretPattern("private-key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"), r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY",
        window=1 << 20),
    # a PuTTY key's private part (the lines after `Private-Lines: N`), with or without the file's header
    SecretPattern("private-key", re.compile(
        r"Private-Lines:[ \t]*\d+[ \t]*(?:\r?\n|(?:\\r)?\\n)(?:[A-Za-z0-9+/]+={0,2}(?:\r?\n|(?:\\r)?\\n|\Z))+"),
        r"Private-Lines:", window=1 << 16),
    SecretPattern("aws-access-key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}"
                                               r"(?![A-Za-z0-9])"),
                  r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}"),
    SecretPattern("aws-secret-key", re.compile(
        r"(?i)aws_?secret(?:_?access)?_?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"),
        r"(?i)aws_?secret", 1),
    SecretPattern("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9]{2,8}\d{0,2}-[A-Za-z0-9_-]{20,}"), r"sk-ant-"),
    SecretPattern("github-token", re.compile(
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])"),
        r"gh[pousr]_[A-Za-z0-9]{36}|github_pat_"),
    SecretPattern("openai-key", re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
                  r"sk-[A-Za-z0-9_-]{20}", check=_openai),
    # ours
    SecretPattern("slack-token", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}"), r"xox[abposr]-"),
    SecretPattern("slack-webhook", re.compile(
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}"), r"hooks\.slack\.com/"),
    SecretPattern("stripe-key", re.compile(r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
                  r"[sr]k_(?:live|test)_[A-Za-z0-9]{16}"),
    SecretPattern("google-api-key", re.compile(r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), r"AIza[0-9A-Za-z_-]{35}"),
    SecretPattern("jwt", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
                  r"eyJ[A-Za-z0-9_-]{8,}\.eyJ", check=_jwt),
    # tokens of named services, each by its documented prefix and shape (as gitleaks knows them): GitLab, npm, PyPI,
    # SendGrid, Hugging Face, Shopify, DigitalOcean, Databricks, HashiCorp Vault, Doppler, Twilio, Telegram, Discord
    # webhooks, Linear, age, Grafana, Slack app tokens, Mailchimp, and an Azure storage account key
    SecretPattern("service-token", re.compile(
        r"(?<![A-Za-z0-9_-])(?:gl(?:pat|dt|rt|ptt|cbt|soat|ft)-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}"
        r"|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|hf_[A-Za-z]{34}"
        r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|do[opr]_v1_[a-f0-9]{64}|dapi[a-f0-9]{32}|hv[sb]\.[A-Za-z0-9_-]{24,}"
        r"|dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,44}|SK[0-9a-f]{32}|lin_api_[A-Za-z0-9]{40}"
        r"|AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
        r"|glc_[A-Za-z0-9+/]{32,}={0,2}|xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,}|[0-9a-f]{32}-us\d{1,2})(?![A-Za-z0-9_-])"
        r"|(?<!\d)\d{8,10}:AA[0-9A-Za-z_-]{33}(?![0-9A-Za-z_-])"
        r"|https://discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}"),
        r"gl(?:pat|dt|rt|ptt|cbt|soat|ft)-|npm_[A-Za-z0-9]{36}|pypi-AgEI|SG\.[A-Za-z0-9_-]{22}\.|hf_[A-Za-z]{34}|shp(?:at|ca|pa|ss)_"
        r"|do[opr]_v1_|dapi[a-f0-9]{32}|hv[sb]\.|dp\.(?:pt|st|sa|ct)\.|SK[0-9a-f]{32}|lin_api_|AGE-SECRET-KEY-1"
        r"|\d{8}:AA|discord(?:app)?\.com/api/webhooks/|glsa_|glc_|xapp-\d-|[0-9a-f]{32}-us\d"),
    SecretPattern("service-token", re.compile(r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)"), r"(?i)AccountKey=", 1),
    SecretPattern("db-password", re.compile(
        rf"(?i)(?<![a-z0-9+])(?:{_DB_SCHEMES})://[^\s:/@'\"]+:([^\s@/'\"]+)@[^\s/'\"]+"),
        rf"(?i)(?:{_DB_SCHEMES})://[^\s:/@'\"]+:[^\s@/'\"]+@", 1, _db_password),
    SecretPattern("api-key", re.compile(
        rf"(?i)(?:(?<![a-z0-9_])(?:{_KEY_NAMES})(?![a-z0-9_])[\"']?\s*[:=]\s*[\"']?|bearer\s+)"
        r"([A-Za-z0-9._~+/-]{16,}=*)"),
        rf"(?i)(?:{_KEY_NAMES})[\"']?\s*[:=]|(?i)bearer\s+[A-Za-z0-9._~+/-]{{16}}", 1, looks_random),
    SecretPattern("url-secret", re.compile(rf"(?i)[?&](?:{_URL_KEYS})=([^&\s#\"'<>]{{16,}})"),
                  rf"(?i)[?&](?:{_URL_KEYS})=[^&\s#\"'<>]{{16}}", 1, looks_random),
    SecretPattern("secret", re.compile(
        rf"(?i)(?:{_PW_NAMES})[\w.-]*[\"']?\s*(?::|=|=>)\s*([\"'])([^\"'\s\\]{{8,128}})\1"),
        rf"(?i)(?:{_PW_NAMES})[^\s\"':=]*[\"']?\s*(?::|=|=>)\s*[\"'][^\"'\s\\]{{8}}", 2, looks_like_password),
    SecretPattern("secret", re.compile(
        rf"(?m)^[ \t]*(?:export[ \t]+)?[A-Z][A-Z0-9_]*(?:{_ENV_NAMES})[A-Z0-9_]*[ \t]*[=:][ \t]*[\"']?([^\s\"']{{8,}})"),
        rf"(?:{_ENV_NAMES})[A-Z0-9_]*[ \t]*[=:]", 1, looks_like_password, lookback=200),
    SecretPattern("credit-card", re.compile(r"(?<!\d)(?<!\d[.-])(?:\d[ -]?){12,18}\d(?!\d|[.-]\d)"),
                  r"\d{4}[ -]?\d{4,6}[ -]?\d{4}", check=_card_number),
    SecretPattern("high-entropy", re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}"), r"[A-Za-z0-9+/_-]{32}",
                  check=high_entropy, bytes_finder=True),
)


__all__ = ["FILE_MAGIC", "PATTERNS", "SecretPattern", "entropy", "high_entropy", "is_placeholder", "looks_like_password",
           "looks_random"]
