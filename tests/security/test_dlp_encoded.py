"""DLP reads encoded content: base64 payloads, compressed streams, archives, and keys without headers.

Regression tests for issue 22 (item 7, "DLP on encoded content"). Strategy: real key material
(generated with `cryptography`: RSA, EC, Ed25519, plain and encrypted, PEM, OpenSSH and DER)
and a realistic `.env` are wrapped in every encoding an agent can ask a server for (base64 as
server-filesystem's `read_media_file` returns it, gzip, zlib, bzip2, xz, zip, tar.gz, nested,
a key's body without its BEGIN line, lines cut from its middle, JSON-escaped), and the
scanner is called directly on MCP-shaped results: the secret's bytes must be absent from
what comes out, decoded. The false-positive side gets the same treatment with public
material (certificates, public keys, the PNG server-everything returns, MIME bodies,
compressed prose). The decoder's bounds are tested on a 1 GiB gzip bomb (refused without
holding more than the bound), a small budget, truncated and corrupt streams, invalid base64.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import datetime
import gzip
import io
import json
import lzma
import os
import tarfile
import tracemalloc
import zipfile
import zlib
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from mcpwall.security import _decode
from mcpwall.security._decode import Budget, Unreadable
from mcpwall.security.dlp import Fingerprints, Scanner

SCANNER = Scanner()
AWS_ID = "AKIAQX4PZ7T2LMNB3KQR"
AWS_SECRET = "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"
ENV = f"APP_NAME=demo\nDEBUG=false\nAWS_ACCESS_KEY_ID={AWS_ID}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\n".encode()
#: the tiny PNG server-everything's get-tiny-image and annotated message return
TINY_PNG = ("iVBORw0KGgoAAAANSUhEUgAAABQAAAAUCAYAAACNiR0NAAAKsGlDQ1BJQ0MgUHJvZmlsZQAASImVlwdUU+kSgOfe9JDQ"
            "AqFICb0LSCeAlBBaAAXpYCMkAUKJMRBU7MriClZURLCs6KqIgo0idizYFsWC3QVZBNR1sWDDlXeBQ9jdd/a9"
            "8+acufPdufPPzH/P/5+5FwCrzhWLs1A1gGxRriQyyI8RFx/HIHUAHlSBhgGIO2pcENW5b8/70m3wCu6gB8XP4"
            "N7Of4e7k6vE7hwE8jzpl33v+B6XhbRkxvEbTAWbLU5zMl6JUYqBaZHjnrB7hGexKHZjzI55sUhHBeCRjxG/rj"
            "cdbF+BD8OEDzm9KQuPxJXvxjo1Fr+/x/FG4nOzcNqI3iz9ZI/tWHBeUhtBUcqjkb/3R/rd5B2XX3LOVSAgZf8e")


def keys() -> dict[str, bytes]:
    """Private keys in the encodings key files come in (PEM with header, OpenSSH, DER)."""
    r = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    e = ec.generate_private_key(ec.SECP256R1())
    d = ed25519.Ed25519PrivateKey.generate()
    pem, der, ssh = serialization.Encoding.PEM, serialization.Encoding.DER, serialization.PrivateFormat.OpenSSH
    plain, p8, trad = serialization.NoEncryption(), serialization.PrivateFormat.PKCS8, \
        serialization.PrivateFormat.TraditionalOpenSSL
    return {
        "rsa-pkcs1.pem": r.private_bytes(pem, trad, plain),
        "rsa-pkcs8.pem": r.private_bytes(pem, p8, plain),
        "rsa-openssh": r.private_bytes(pem, ssh, plain),
        "ec-sec1.pem": e.private_bytes(pem, trad, plain),
        "ec-pkcs8.pem": e.private_bytes(pem, p8, plain),
        "ed25519-openssh": d.private_bytes(pem, ssh, plain),
        "ed25519-pkcs8.pem": d.private_bytes(pem, p8, plain),
        "rsa-encrypted-pkcs8.pem": r.private_bytes(pem, p8, serialization.BestAvailableEncryption(b"pw")),
        "rsa.der": r.private_bytes(der, trad, plain),
        "rsa-pkcs8.der": r.private_bytes(der, p8, plain),
        "ec.der": e.private_bytes(der, trad, plain),
        "ed25519.der": d.private_bytes(der, p8, plain),
    }


KEYS = keys()
PEM_KEYS = {k: v for k, v in KEYS.items() if not k.endswith(".der")}


def certificate() -> tuple[bytes, bytes, bytes]:
    """A self-signed certificate (PEM, DER) and its public key (PEM): public material."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return (cert.public_bytes(serialization.Encoding.PEM), cert.public_bytes(serialization.Encoding.DER), public)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def media(data: bytes, kind: str = "resource", mime: str = "application/octet-stream") -> dict[str, Any]:
    """A result shaped like server-filesystem's read_media_file (content and structuredContent)."""
    if kind == "resource":
        item: dict[str, Any] = {"type": "resource",
                                "resource": {"uri": "file:///ws/f", "mimeType": mime, "blob": b64(data)}}
    else:
        item = {"type": kind, "data": b64(data), "mimeType": mime}
    return {"content": [item], "structuredContent": {"content": [item]}}


def delivered(value: Any) -> bytes:
    """Everything a client could read out of `value`: the JSON, and every base64 payload decoded."""
    out = [json.dumps(value).encode()]

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("blob", "data") and isinstance(x, str):
                    out.append(base64.b64decode(x))
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(value)
    return b"\n".join(out)


def body_lines(pem: bytes) -> list[str]:
    return [line for line in pem.decode().splitlines() if line and not line.startswith("-----")]


# ---------------------------------------------------------------------- base64 payloads


@pytest.mark.parametrize("kind", ["resource", "image", "audio"])
def test_a_base64_env_file_is_withheld_whole_in_content_and_structured_content(kind: str) -> None:
    result = media(ENV, kind)
    out, found = SCANNER.redact(result, "result")
    got = delivered(out)
    assert AWS_ID.encode() not in got
    assert AWS_SECRET.encode() not in got
    assert {f.type for f in found} >= {"aws-access-key"}
    item = out["content"][0]
    blob = item["resource"] if kind == "resource" else item
    assert blob["mimeType"] == "text/plain"
    assert base64.b64decode(blob["blob" if kind == "resource" else "data"]).startswith(b"[mcpwall withheld")
    assert out["structuredContent"]["content"][0] == item  # same shape: the output schema still holds


@pytest.mark.parametrize("name", sorted(KEYS))
def test_every_private_key_file_read_as_base64_is_withheld(name: str) -> None:
    out, found = SCANNER.redact(media(KEYS[name]), "result")
    assert found
    assert found[0].type == "private-key"
    got = delivered(out)
    assert KEYS[name] not in got
    for line in body_lines(KEYS[name]) if not name.endswith(".der") else [b64(KEYS[name])[:64]]:
        assert line.encode() not in got


def test_a_base64_body_sent_as_text_is_masked() -> None:
    for text in (b64(ENV), base64.encodebytes(ENV).decode(), base64.urlsafe_b64encode(ENV).decode(),
                 f"here: {b64(ENV)} (from the backup)", json.dumps({"file": b64(ENV)}), f"ENV_B64={b64(ENV)}",
                 f"config.{b64(ENV)}", b64(b"!" * 48 + ENV)):
        out, found = SCANNER.redact({"content": [{"type": "text", "text": text}]})
        assert found, text
        assert AWS_ID not in json.dumps(out)
        assert b64(ENV) not in json.dumps(out)


@pytest.mark.parametrize("width", [8, 12, 16, 20, 28])
def test_base64_wrapped_in_short_lines_is_masked(width: int) -> None:
    for data, secret in ((ENV, AWS_ID), (KEYS["rsa-pkcs1.pem"], "PRIVATE KEY")):
        b = b64(data)
        text = "\n".join(b[i:i + width] for i in range(0, len(b), width)) + "\n"
        out, found = SCANNER.redact_text(text)
        assert found, width
        assert secret not in out
        assert out.strip().startswith("[REDACTED-")
        assert len(out.strip()) < 40  # nothing of the body is left beside the mask


def test_a_short_base64_secret_that_is_the_whole_string_is_masked() -> None:
    out, found = SCANNER.redact({"value": b64(AWS_ID.encode())})
    assert found
    assert found[0].type == "aws-access-key"
    assert out["value"] == "[REDACTED-aws-access-key]"


# ---------------------------------------------------------------------- compressed and archived


def _zip(data: bytes, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        z.writestr("README.txt", "nothing here\n")
        z.writestr("config/.env", data)
    return buf.getvalue()


def _targz(data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo(".env")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


PACKED = {
    "gzip": gzip.compress, "zlib": zlib.compress, "raw-multi-member-gzip": lambda d: gzip.compress(b"x\n") + gzip.compress(d),
    "bzip2": bz2.compress, "xz": lzma.compress, "zip": _zip, "zip-stored": lambda d: _zip(d, zipfile.ZIP_STORED),
    "zip-bzip2": lambda d: _zip(d, zipfile.ZIP_BZIP2), "zip-lzma": lambda d: _zip(d, zipfile.ZIP_LZMA),
    "tar.gz": _targz, "gzip-of-gzip": lambda d: gzip.compress(gzip.compress(d)),
    "gzip-of-base64": lambda d: gzip.compress(base64.encodebytes(d)),
    "base64-of-gzip-as-file": lambda d: base64.b64encode(gzip.compress(d)),
}


@pytest.mark.parametrize("how", sorted(PACKED))
def test_a_compressed_env_file_is_withheld(how: str) -> None:
    out, found = SCANNER.redact(media(PACKED[how](ENV)), "result")
    assert found, how
    got = delivered(out)
    assert AWS_ID.encode() not in got
    assert AWS_SECRET.encode() not in got


@pytest.mark.parametrize("how", ["gzip", "zip", "tar.gz", "xz"])
def test_a_compressed_private_key_is_withheld(how: str) -> None:
    key = KEYS["ed25519-openssh"]
    out, found = SCANNER.redact(media(PACKED[how](key)), "result")
    assert {f.type for f in found} == {"private-key"}
    assert body_lines(key)[0].encode() not in delivered(out)


def test_a_gzip_read_as_latin1_text_is_still_opened() -> None:
    text = gzip.compress(ENV).decode("latin-1")
    out, found = SCANNER.redact({"content": [{"type": "text", "text": text}]})
    assert found
    assert AWS_ID not in json.dumps(out)


def _hexdump(data: bytes, style: str) -> str:
    """`xxd`, `xxd -p`, `hexdump -C` and `od -A x -t x1z` output, made here (the tools may be absent)."""
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off:off + 16]
        ascii_col = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        if style == "xxd":
            groups = " ".join(chunk[i:i + 2].hex() for i in range(0, len(chunk), 2))
            lines.append(f"{off:08x}: {groups:<39}  {ascii_col}")
        elif style == "hexdump":
            left, right = " ".join(f"{b:02x}" for b in chunk[:8]), " ".join(f"{b:02x}" for b in chunk[8:])
            lines.append(f"{off:08x}  {left:<23}  {right:<23}  |{ascii_col}|")
        else:
            lines.append(f"{off:06x} {' '.join(f'{b:02x}' for b in chunk):<47}  >{ascii_col}<")
    if style == "xxd -p":
        h = data.hex()
        return "\n".join(h[i:i + 60] for i in range(0, len(h), 60)) + "\n"
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("style", ["xxd", "xxd -p", "hexdump", "od"])
def test_a_hex_dump_of_a_secret_file_is_masked(style: str) -> None:
    for data, secret in ((ENV, AWS_ID), (KEYS["rsa-pkcs1.pem"], body_lines(KEYS["rsa-pkcs1.pem"])[1][:16])):
        dump = _hexdump(data, style)
        out, found = SCANNER.redact({"content": [{"type": "text", "text": dump}]})
        assert found, style
        text = out["content"][0]["text"]
        assert secret not in text.replace("\n", "")
        assert data[16:32].hex() not in text.replace(" ", "").replace("\n", "")


def test_base32_and_fully_percent_escaped_files_are_masked() -> None:
    b32 = base64.b32encode(ENV).decode()
    escaped = "".join(f"%{b:02X}" for b in ENV)
    for text in (b32, "\n".join(b32[i:i + 76] for i in range(0, len(b32), 76)), escaped, f"url={escaped}&x=1"):
        out, found = SCANNER.redact_text(text)
        assert found, text[:40]
        assert AWS_ID not in out
        assert escaped[:60] not in out
    for benign in ("THISISACONSTANTNAMEWITHOUTUNDERSCORESATALL", "q=%E4%BD%A0%E5%A5%BD%E4%B8%96%E7%95%8C%E4%BD%A0"):
        assert SCANNER.spans(benign) == []


def test_uuencoded_and_utf16_files_are_masked() -> None:
    uu = "begin 644 .env\n" + "".join(binascii.b2a_uu(ENV[i:i + 45]).decode() for i in range(0, len(ENV), 45))
    uu += "`\nend\n"
    wide = ENV.decode().encode("utf-16")
    for value in ({"text": uu}, media(uu.encode()), media(wide), {"text": wide.decode("utf-8", "replace")},
                  {"text": ENV.decode().encode("utf-16-le").decode("latin-1")}):
        out, found = SCANNER.redact(value)
        assert found, value
        got = delivered(out)
        assert AWS_ID.encode() not in got.replace(b"\x00", b"").replace(b"\\u0000", b"")


def test_hex_digests_and_commit_ids_are_not_decoded_into_findings() -> None:
    text = ("commit 3f2a9c1d4e5b6a7980c1d2e3f4a5b6c7d8e9f0a1\n"
            "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  file.tar\n")
    assert SCANNER.spans(text) == []


def test_a_pkcs12_bundle_is_key_material() -> None:
    from cryptography.hazmat.primitives.serialization import pkcs12

    key = ec.generate_private_key(ec.SECP256R1())
    p12 = pkcs12.serialize_key_and_certificates(b"me", key, None, None, serialization.BestAvailableEncryption(b"pw"))
    assert _decode.key_material(p12)
    _, found = SCANNER.redact(media(p12))
    assert {f.type for f in found} == {"private-key"}


# ---------------------------------------------------------------------- keys recognised by content


@pytest.mark.parametrize("name", sorted(PEM_KEYS))
def test_a_private_key_without_its_begin_line_is_masked(name: str) -> None:
    text = PEM_KEYS[name].decode()
    lines = text.splitlines()
    body = body_lines(PEM_KEYS[name])
    variants = {
        "tail -n +2": "\n".join(lines[1:]) + "\n",
        "body only": "\n".join(body),
        "first lines": "\n".join(body[:3]),
        "joined": "".join(body),
        "json-escaped": json.dumps("\n".join(lines[1:]))[1:-1],
        "indented": "\n".join("    " + line for line in body),
        "crlf": "\r\n".join(body),
    }
    if len(body) >= 5:
        variants["middle lines"] = "\n".join(body[2:5])
    for how, variant in variants.items():
        out, found = SCANNER.redact({"content": [{"type": "text", "text": variant}]})
        masked = out["content"][0]["text"]
        assert found, f"{name}: {how}"
        for line in body:
            if len(line) >= 32 and line in variant:
                assert line not in masked, f"{name}: {how}"


def test_a_putty_key_is_masked_with_or_without_its_header() -> None:
    private = b64(os.urandom(36))
    text = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key\nPublic-Lines: 2\n"
            "AAAAC3NzaC1lZDI1NTE5AAAAIKt7\nAAAA\nPrivate-Lines: 1\n" + private + "\nPrivate-MAC: 6a5f\n")
    for variant in (text, text.split("Comment: eddsa-key\n", 1)[1], text.replace("\n", "\\n")):
        out, found = SCANNER.redact_text(variant)
        assert private not in out
        assert found[0].type == "private-key"


def test_a_key_found_by_its_content_is_remembered_for_exfiltration() -> None:
    body = body_lines(KEYS["rsa-pkcs1.pem"])
    _, found = SCANNER.redact({"text": "\n".join(body)})
    fp = Fingerprints()
    fp.add("s1", found)
    assert fp.match("s1", {"content": body[3]}, SCANNER)


# ---------------------------------------------------------------------- what must not be masked


def test_public_material_and_ordinary_base64_pass_untouched() -> None:
    cert_pem, cert_der, public_pem = certificate()
    random_block = base64.encodebytes(os.urandom(3000)).decode()  # a MIME body: 76-character lines
    benign = {
        "certificate": cert_pem.decode(),
        "certificate blob": media(cert_pem),
        "certificate der blob": media(cert_der),
        "certificate body": "\n".join(body_lines(cert_pem)),
        "public key": public_pem.decode(),
        "ssh public key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKt7bXl2ZPs0LcQJm3i5nUvKpS2Yqz0hJm8aWc4xR1dE user@host",
        "tiny png": media(base64.b64decode(TINY_PNG), "image", "image/png"),
        "mime body": random_block,
        "mime body json": json.dumps({"attachment": random_block}),
        "gzip of prose": media(gzip.compress(b"The quick brown fox jumps over the lazy dog.\n" * 200)),
        "zip of prose": media(_zip(b"nothing secret\n")),
        "everything's blob": media(b"Resource 2: This is a base64 blob created at 2026-12-01T21:00:00.000Z"),
        "base64 prose": b64(b"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"),
        "random bytes blob": media(os.urandom(4096)),
        "identifiers": "SomeVeryLongClassNameWithoutDigits and another_long_snake_case_identifier_name",
    }
    for what, value in benign.items():
        out, found = SCANNER.redact(value)
        assert found == [], what
        assert out is value, what


def test_certificate_bundles_are_not_reported_as_secrets() -> None:
    bundle = "".join(certificate()[0].decode() for _ in range(5))
    assert SCANNER.spans(bundle) == []


# ---------------------------------------------------------------------- the MIME-block exemption


def test_the_data_block_exemption_looks_past_the_newline_not_the_letter_n() -> None:
    """Issue 22: the next-line check split on the letter `n`, so a key-like token followed by a
    line of prose with a long word (`(see internationalizationSupport)`) was exempted as a line of
    a MIME body: the check read the word after its first `n` instead of the line."""
    token = "Zx8Kq2Lm9Pw4Rt7Vb3Nc6Hd1Jf5Gs0Ya8Ue2Io4Pk7Ql9Mn3Bv6Cx1Dz5Fw8Ey2T"
    for text in (f"{token}\n(see internationalizationSupport)", f"{token}\r\n# internationalizationSupport",
                 f"{token}\\n(see internationalizationSupport)"):
        for scanner in (SCANNER, Scanner(decode=False)):  # with and without the encoded-content pass
            out, found = scanner.redact_text(text)
            assert token not in out, text
            assert found, text


def test_a_mime_body_whose_next_line_has_no_letter_n_is_still_exempt() -> None:
    lines = ["QUJDREVGR0hJSktMTU9QUVJTVFVWV1hZWjAxMjM0NTY3ODlhYmNkZWZnaGlqa2xtb3BxcnN0dXZ3eHl6",
             "K0wvUXdlcnR5dWlvcDEyMzQ1Njc4OTBBU0RGR0hKS0xaWENWQk1xd2VydHl1aW9wYXNkZmdoamts"]
    lines = [line.replace("n", "X").replace("N", "Y") for line in lines]
    found = SCANNER.spans("\n".join(lines))
    assert found == []


# ---------------------------------------------------------------------- bounds


def _gzip_of_zeros(total: int) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    chunk = bytes(16 << 20)
    parts = [z.compress(chunk) for _ in range(total >> 24)]
    return b"".join(parts) + z.flush()


@pytest.mark.parametrize("members", [1, 1024])
def test_a_gzip_bomb_of_one_gib_is_refused_without_holding_more_than_the_bound(members: int) -> None:
    """One stream of 1 GiB of zeros, and 1024 gzip members of 1 MiB each (the same GiB)."""
    bomb = _gzip_of_zeros(1 << 30) if members == 1 else gzip.compress(bytes(1 << 20)) * members
    assert len(bomb) < 2 << 20
    result = media(bomb)
    tracemalloc.start()
    try:
        out, found = SCANNER.redact(result)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert {f.type for f in found} == {"unscanned"}
    assert base64.b64decode(out["content"][0]["resource"]["blob"]).startswith(b"[mcpwall withheld")
    assert peak < _decode.MAX_DECODED + (8 << 20)  # the bound, plus the base64 text and copies of it


def test_unpack_stops_at_the_budget_and_the_ratio() -> None:
    budget = Budget(1 << 20)
    with pytest.raises(Unreadable):
        _decode.unpack(gzip.compress(os.urandom(1 << 19) * 4), budget)
    assert budget.exceeded
    assert budget.left == 0
    with pytest.raises(Unreadable, match="bomb"):
        _decode.unpack(_gzip_of_zeros(64 << 20), Budget())


def test_one_message_shares_one_budget() -> None:
    scanner = Scanner(max_decoded=1 << 16)
    small = b64(os.urandom(40_000))
    out, found = scanner.redact({"content": [{"type": "image", "data": small, "mimeType": "image/png"},
                                             {"type": "image", "data": small, "mimeType": "image/png"}]})
    assert [f.type for f in found] == ["unscanned"]
    assert out["content"][0]["data"] == small  # the first fit the budget; the second did not


def test_a_truncated_or_corrupt_stream_is_scanned_as_far_as_it_goes() -> None:
    packed = gzip.compress(ENV + b"#" * 5000, compresslevel=1)
    for cut in (packed[: len(packed) // 2], packed[:-8], packed[:40] + b"\x00garbage" + packed[48:]):
        out, _found = SCANNER.redact(media(cut))
        assert AWS_ID.encode() not in delivered(out)
    assert _decode.unpack(gzip.compress(b"harmless text " * 100)[:-8], Budget()) == b"harmless text " * 100
    assert _decode.unpack(b"\x1f\x8b\x08\x00garbage", Budget()) == b""
    assert SCANNER.redact(media(gzip.compress(b"harmless text\n" * 100)[:-20]))[1] == []


def test_content_that_only_looks_compressed_or_hides_beside_a_stream_is_still_scanned() -> None:
    for data in (b"x^" + ENV,  # a zlib header by its first two bytes
                 b"\x1f\x8b" + ENV,  # a gzip magic, then plain text
                 gzip.compress(b"harmless\n") + ENV,  # a valid stream, then plain text after it
                 _zip(b"nothing\n") + ENV,  # text after a zip archive
                 base64.b64decode(TINY_PNG) + ENV):  # text after an image
        out, found = SCANNER.redact(media(data))
        assert found, data[:8]
        assert AWS_ID.encode() not in delivered(out)


def test_invalid_base64_is_left_to_the_text_scan() -> None:
    assert _decode.b64_bytes("not base64 at all!") is None
    assert _decode.b64_bytes("QUJD=RUY=") is None
    assert _decode.b64_bytes("QUJDRA-_") is not None
    value = {"data": "this is plain text, not base64, with no secret in it"}
    assert SCANNER.redact(value) == (value, [])
    masked, _found = SCANNER.redact({"data": f"oops {AWS_ID} in a log line"})
    assert masked["data"] == "oops [REDACTED-aws-access-key] in a log line"  # text masking, not a blob notice


def test_decoding_can_be_switched_off() -> None:
    plain = Scanner(decode=False)
    assert plain.redact(media(ENV))[1] == []


def test_a_server_message_carrying_an_encoded_secret_is_masked_the_same_way() -> None:
    """The one path every server-to-client message takes (`DLPStage.mask_outbound`) decodes too."""
    from mcpwall.stages.dlp import DLPStage

    stage = DLPStage()
    log_line = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": b64(ENV)}}
    sampling = {"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {"messages": [
        {"role": "user", "content": {"type": "image", "mimeType": "image/png", "data": b64(gzip.compress(ENV))}}],
        "maxTokens": 10}}
    for msg in (log_line, sampling):
        out = stage.mask_outbound("s1", msg)
        assert out is not msg
        assert AWS_ID.encode() not in delivered(out)
    assert stage.mask_outbound("s1", {"jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": "info", "data": TINY_PNG}})["params"]["data"] == TINY_PNG
