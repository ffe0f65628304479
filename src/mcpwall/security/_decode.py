"""Encoded content DLP must read: base64 bodies, compressed streams, archives, and key material.

A file can reach a client as a base64 `blob`/`data` (server-filesystem's
`read_media_file` returns any file that way), compressed (a `.gz` of a `.env`),
or as a private key without its `-----BEGIN` line (`tail -n +2 id_rsa`). The
scanner decodes such content here and scans what comes out with the same
detectors (dlp.py); this module only turns bytes into bytes and says whether
bytes are key material.

Bounds: every decoded or decompressed byte of one message is charged to one
`Budget` (8 MiB by default), decompression runs in 64 KiB steps so that a bomb
never holds more than the budget, and a stream that inflates more than
`MAX_RATIO` times past its first MiB is a bomb. Content past a bound is not
scanned, and the scanner withholds it (fails closed) rather than pass it unread.
"""

from __future__ import annotations

import binascii
import bz2
import io
import lzma
import zipfile
import zlib
from collections.abc import Callable

MAX_DECODED = 8 << 20
#: output over input past the first MiB: text compresses 5-20x, a bomb of zeros about 1000x
MAX_RATIO = 200
FREE_RATIO_BYTES = 1 << 20
CHUNK = 64 << 10
MAX_LAYERS = 4
MAX_MEMBERS = 256

GZIP = b"\x1f\x8b"
BZIP2 = b"BZh"
XZ = b"\xfd7zXZ\x00"
ZIP = (b"PK\x03\x04", b"PK\x05\x06")


class Budget:
    """Decoded bytes still allowed for one message; `exceeded` once anything was cut short."""

    __slots__ = ("exceeded", "left")

    def __init__(self, limit: int = MAX_DECODED) -> None:
        self.left = limit
        self.exceeded = False

    def take(self, n: int) -> bool:
        if n > self.left:
            self.exceeded = True
            self.left = 0
            return False
        self.left -= n
        return True


class Unreadable(Exception):
    """The content is past a bound (size or ratio): it cannot be scanned whole."""


def b64_bytes(run: str, loose: bool = False) -> bytes | None:
    """The bytes a base64 run (std or URL-safe, lines broken by real or escaped newlines) encodes.

    `loose`: a piece cut from a longer body (its padding wrong, its end mid-group), decoded as far
    as whole groups go.
    """
    raw = run
    if "\\" in raw or any(c in raw for c in " \t\r\n"):
        raw = "".join(raw.replace("\\r", "").replace("\\n", "").split())
    if "-" in raw or "_" in raw:
        if "+" in raw or "/" in raw:
            return None
        raw = raw.replace("-", "+").replace("_", "/")
    body = raw.rstrip("=")
    if loose:
        body = body.replace("=", "")
        body = body[:len(body) - len(body) % 4]
    if len(body) % 4 == 1 or "=" in body:
        return None
    try:
        # strict_mode: the alphabet and padding checked in C (b64decode's `validate` is a Python regex)
        return binascii.a2b_base64(body + "=" * (-len(body) % 4), strict_mode=True)
    except (binascii.Error, ValueError):
        return None


def compressed(data: bytes) -> bool:
    """Does `data` start like a stream `unpack` opens (gzip, zlib, bzip2, xz, zip)?"""
    if data.startswith((GZIP, XZ, *ZIP)):
        return True
    if data.startswith(BZIP2):
        return data[3:4].isdigit()
    return len(data) >= 2 and data[0] == 0x78 and (data[0] << 8 | data[1]) % 31 == 0


def unpack(data: bytes, budget: Budget) -> bytes:
    """The content of one compressed layer (partial when the stream is truncated or corrupt).

    Raises Unreadable when the output passes the budget or the ratio bound.
    """
    if data.startswith(ZIP):
        return _unzip(data, budget)
    if data.startswith(BZIP2):
        return _stream(bz2.BZ2Decompressor, data, budget)
    if data.startswith(XZ):
        return _stream(lzma.LZMADecompressor, data, budget)
    return _inflate(data, budget)


def _charge(out: bytearray, chunk: bytes, consumed: int, budget: Budget) -> None:
    if not budget.take(len(chunk)):
        raise Unreadable(f"decoded content exceeds the {MAX_DECODED >> 20} MiB DLP bound")
    out += chunk
    if len(out) > FREE_RATIO_BYTES and len(out) > MAX_RATIO * max(consumed, 1):
        budget.exceeded = True
        raise Unreadable(f"compressed content inflates more than {MAX_RATIO}x (a decompression bomb)")


def _inflate(data: bytes, budget: Budget) -> bytes:
    """gzip (every member) or zlib, in bounded steps."""
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(47)  # 32 + 15: gzip or zlib header, detected
        buf = rest
        try:
            while buf:
                chunk = d.decompress(buf, CHUNK)
                buf = d.unconsumed_tail
                _charge(out, chunk, len(data) - len(buf) - len(d.unused_data), budget)
                if d.eof or not chunk:
                    break
        except zlib.error:
            return bytes(out)  # corrupt: what came out before is what a client could read too
        rest = d.unused_data if d.eof and d.unused_data.startswith(GZIP) else b""
    return bytes(out)


def _stream(factory: Callable[[], bz2.BZ2Decompressor | lzma.LZMADecompressor], data: bytes,
            budget: Budget) -> bytes:
    out = bytearray()
    d = factory()
    try:
        chunk = d.decompress(data, CHUNK)
        while True:
            _charge(out, chunk, len(data), budget)
            if d.eof or d.needs_input:
                break
            chunk = d.decompress(b"", CHUNK)
    except (OSError, EOFError, lzma.LZMAError):
        pass
    return bytes(out)


def _unzip(data: bytes, budget: Budget) -> bytes:
    """Every readable member, one after another (an encrypted member cannot be read: skipped)."""
    out = bytearray()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return b""
    with archive:
        for info in members[:MAX_MEMBERS]:
            if info.is_dir() or info.flag_bits & 0x1:
                continue
            try:
                with archive.open(info) as f:
                    while chunk := f.read(CHUNK):
                        _charge(out, chunk, len(data), budget)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError,
                    zlib.error, lzma.LZMAError):
                continue
            out += b"\n"
    return bytes(out)


# ---------------------------------------------------------------------- key material

#: PKCS#5/PKCS#12 password-based encryption OIDs (1.2.840.113549.1.5.* and .1.12.1.*), DER-encoded
_PBE_OIDS = (bytes.fromhex("2a864886f70d0105"), bytes.fromhex("2a864886f70d010c01"))
_PKCS7_DATA = bytes.fromhex("2a864886f70d010701")
OPENSSH = b"openssh-key-v1\x00"
_SSH_PUBLIC = (b"ssh-", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-", b"rsa-sha2-")


def _tlv(data: bytes, pos: int) -> tuple[int, int, int] | None:
    """(tag, value start, value end) of the DER element at `pos`, or None."""
    if pos + 2 > len(data):
        return None
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    else:
        n = first & 0x7F
        if not 1 <= n <= 4 or pos + n > len(data):
            return None
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    return tag, pos, pos + length


def key_material(data: bytes) -> bool:
    """Bytes that are a private key by their structure, whatever header line (if any) came with them.

    OpenSSH's binary format; DER PKCS#1 RSA/DSA, SEC1 EC, PKCS#8 (plain and encrypted) and PKCS#12.
    Certificates, public keys and CSRs (a SEQUENCE that opens with a SEQUENCE of a non-PBE
    algorithm) are not key material. Only the first elements are read, so a truncated key counts.
    """
    if data.startswith(OPENSSH):
        return True
    top = _tlv(data, 0)
    if top is None or top[0] != 0x30:
        return False
    first = _tlv(data, top[1])
    if first is None:
        return False
    tag, start, end = first
    second = _tlv(data, end)
    if tag == 0x02 and end - start == 1:  # version INTEGER
        version = data[start]
        if second is None:
            return False
        if version == 0 and second[0] == 0x30:  # PKCS#8: AlgorithmIdentifier, then the key OCTET STRING
            alg = _tlv(data, second[1])
            third = _tlv(data, second[2])
            return alg is not None and alg[0] == 0x06 and third is not None and third[0] == 0x04
        if version == 0 and second[0] == 0x02:  # PKCS#1 RSA / DSA: the modulus (p), then more integers
            return second[2] - second[1] >= 64
        if version == 1 and second[0] == 0x04:  # SEC1 ECPrivateKey: the private scalar
            return 20 <= second[2] - second[1] <= 72
        if version == 1 and second[0] == 0x30:  # PKCS#8 v2 (OneAsymmetricKey)
            third = _tlv(data, second[2])
            return third is not None and third[0] == 0x04
        if version == 3 and second[0] == 0x30:  # PKCS#12: authSafe ContentInfo
            oid = _tlv(data, second[1])
            return oid is not None and data[oid[1]:oid[2]] == _PKCS7_DATA
        return False
    if tag == 0x30 and second is not None and second[0] == 0x04:  # EncryptedPrivateKeyInfo
        oid = _tlv(data, start)
        return oid is not None and oid[0] == 0x06 and data[oid[1]:oid[2]].startswith(_PBE_OIDS)
    return False


def public_der(data: bytes) -> bool:
    """A certificate, CSR, CRL or public key: a SEQUENCE whose first element is a SEQUENCE; or an
    SSH public key (`ssh-ed25519 AAAAC3...`: a length-prefixed algorithm name)."""
    if data[:3] == b"\x00\x00\x00" and data[4:].startswith(_SSH_PUBLIC) and 7 <= data[3] <= 64:
        return True
    top = _tlv(data, 0)
    if top is None or top[0] != 0x30:
        return False
    first = _tlv(data, top[1])
    return first is not None and first[0] == 0x30 and not key_material(data)


def readable(data: bytes) -> str | None:
    """`data` as text when it is text (UTF-8, or UTF-16 with its BOM or NULs every other byte;
    nine in ten characters printable), else None."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(data) >= 16 and data[1::2].count(0) * 10 >= len(data) * 4):
        try:
            wide = data.decode("utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-16-le")
        except UnicodeDecodeError:
            wide = ""
        if wide and sum(ch.isprintable() or ch in "\t\r\n" for ch in wide[:4096]) * 10 >= min(len(wide), 4096) * 9:
            return wide
    if not data or len(data.translate(None, _TEXT_BYTES)) * 10 > len(data):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


#: bytes of text: printable ASCII, tab, CR, LF, and every byte of a UTF-8 sequence
_TEXT_BYTES = bytes([9, 10, 13, *range(32, 127), *range(128, 256)])


_ASCII = bytes(b if 32 <= b < 127 or b in (9, 10, 13) else 32 for b in range(256))


def binary_text(data: bytes) -> str:
    """The ASCII text inside binary data (everything else a space): where a tar's or an image's
    embedded secrets are found."""
    return data.translate(_ASCII).decode("ascii")


__all__ = ["MAX_DECODED", "Budget", "Unreadable", "b64_bytes", "binary_text", "compressed", "key_material",
           "public_der", "readable", "unpack"]
