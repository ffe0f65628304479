"""Secrets in encoded files never reach the client through the gateway (issue 22, item 7).

Strategy: a real gateway process in enforce mode in front of the real
@modelcontextprotocol/server-filesystem and server-everything, with a policy
that allows the reads. The workspace holds an `id_rsa` (ssh-keygen when it is
installed, else `cryptography`), an OpenSSH ed25519 key, a DER key, an `.env`
with an AWS key pair, and the same secrets gzip'ed, zipped, tarred, base64'ed
and cut from their header lines. The official client reads each one with
`read_media_file` (the base64 blob/data path) and `read_text_file`; everything
the client got is decoded (every base64 payload, every compressed layer) and
the secret bytes must be absent; so must they be from the ledger's
`response_preview` and stored bodies. The false-positive side: images,
certificates and compressed prose read the same way, and server-everything's
blob resources and gzip tool, come back byte for byte.
"""

from __future__ import annotations

import asyncio
import base64
import bz2
import contextlib
import functools
import gzip
import http.server
import io
import json
import lzma
import re
import shutil
import sqlite3
import subprocess
import tarfile
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from tests.proxy.harness import EVERYTHING, PERMISSIVE, GatewayProcess, filesystem, http_client
from tests.security.test_dlp_encoded import AWS_ID, AWS_SECRET, ENV, TINY_PNG, _hexdump, certificate

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

#: the reads are allowed: the sensitive-path checks (schema, judge) are what this test does not rely on
POLICY = PERMISSIVE.replace("stages:\n", "stages:\n  schema: {pathSafety: false}\n  judge: false\n")


def _rsa_pem(tmp: Path) -> bytes:
    if shutil.which("ssh-keygen"):
        subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-f",
                        str(tmp / "k")], check=True, capture_output=True, timeout=60)
        return (tmp / "k").read_bytes()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _zip(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, data)
    return buf.getvalue()


def _targz(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Workspace:
    """The files an agent reads, and for each the secret strings that must not come back."""

    def __init__(self, root: Path, keygen: Path) -> None:
        self.root = root
        rsa_pem = _rsa_pem(keygen)
        ed = ed25519.Ed25519PrivateKey.generate()
        ed_pem = ed.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                  serialization.NoEncryption())
        der = ed.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption())
        body = [line for line in rsa_pem.decode().splitlines() if line and not line.startswith("-----")]
        self.rsa_lines = [line for line in body if len(line) >= 40]
        self.ed_lines = [line for line in ed_pem.decode().splitlines() if len(line) >= 40]
        env_secrets = [AWS_ID, AWS_SECRET]
        self.files: dict[str, tuple[bytes, list[str]]] = {
            "id_rsa": (rsa_pem, self.rsa_lines),
            "id_ed25519": (ed_pem, self.ed_lines),
            "key.der": (der, [base64.b64encode(der).decode()[:40]]),
            ".env": (ENV, env_secrets),
            "env.gz": (gzip.compress(ENV), env_secrets),
            "env.zlib": (zlib.compress(ENV), env_secrets),
            "env.bz2": (bz2.compress(ENV), env_secrets),
            "env.xz": (lzma.compress(ENV), env_secrets),
            "secrets.zip": (_zip(".env", ENV), env_secrets),
            "backup.tar.gz": (_targz("home/.ssh/id_rsa", rsa_pem), self.rsa_lines),
            "env.b64": (base64.encodebytes(ENV), env_secrets),
            "env.gz.b64": (base64.encodebytes(gzip.compress(ENV)), env_secrets),
            "key_tail.txt": ("\n".join(rsa_pem.decode().splitlines()[1:]).encode() + b"\n", self.rsa_lines),
            "key_body.txt": ("\n".join(body).encode() + b"\n", self.rsa_lines),
            "key_middle.txt": ("\n".join(body[4:9]).encode() + b"\n", body[4:9]),
            "ed_tail.txt": ("\n".join(ed_pem.decode().splitlines()[1:-1]).encode(), self.ed_lines[1:]),
            "id_rsa.png": (rsa_pem, self.rsa_lines),  # the image path: `data`, not `blob`
            "env.mp3": (ENV, env_secrets),  # and the audio one
            "env.xxd": (_hexdump(ENV, "xxd").encode(), env_secrets),
            "id_rsa.hexdump": (_hexdump(rsa_pem, "hexdump").encode(), [rsa_pem[32:40].hex(" "), rsa_pem[40:48].hex(" ")]),
            "env.b32": (base64.b32encode(ENV), env_secrets),
        }
        cert_pem, cert_der, public = certificate()
        self.benign: dict[str, bytes] = {
            "tiny.png": base64.b64decode(TINY_PNG),
            "cert.pem": cert_pem,
            "cert.der": cert_der,
            "public.pem": public,
            "notes.txt.gz": gzip.compress(b"Meeting notes: ship on Friday, nothing secret here.\n" * 50),
            "readme.zip": _zip("README.md", b"# A project\n\nNothing to hide.\n"),
        }
        for name, (data, _) in self.files.items():
            (root / name).write_bytes(data)
        for name, data in self.benign.items():
            (root / name).write_bytes(data)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("ws-encoded"), tmp_path_factory.mktemp("keygen"))


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, ws: Workspace) -> Iterator[GatewayProcess]:
    g = GatewayProcess(tmp_path_factory.mktemp("gw-encoded"), {"fs": filesystem(ws.root), "everything": EVERYTHING},
                       POLICY).start()
    yield g
    g.stop()


def opened(data: bytes, depth: int = 0) -> list[bytes]:
    """`data` and every layer a client could unpack from it (compressed streams, archives, base64)."""
    out = [data]
    if depth > 4:
        return out
    inner: list[bytes] = []
    try:
        if data.startswith(b"\x1f\x8b") or data[:1] == b"\x78":
            inner.append(zlib.decompressobj(47).decompress(data))
        elif data.startswith(b"BZh"):
            inner.append(bz2.decompress(data))
        elif data.startswith(b"\xfd7zXZ"):
            inner.append(lzma.decompress(data))
        elif data.startswith(b"PK\x03\x04"):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                inner.extend(z.read(n) for n in z.namelist())
    except (OSError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, EOFError):
        pass
    for text in (data, *inner):
        stripped = b"".join(text.split())
        if stripped and len(stripped) % 4 == 0:
            with contextlib.suppress(ValueError):
                inner.append(base64.b64decode(stripped, validate=True))
    for layer in inner:
        out.extend(opened(layer, depth + 1))
    return out


_B64_RUN = re.compile(rb"[A-Za-z0-9+/]{16,}={0,2}")


def in_text(text: bytes) -> list[bytes]:
    """`text` and what every base64 run in it (a blob inside a clipped JSON preview) decodes to."""
    out = [text]
    for m in _B64_RUN.finditer(text.replace(b"\\n", b"")):
        run = m.group(0).rstrip(b"=")
        out.extend(opened(base64.b64decode(run[:len(run) - len(run) % 4])))
    return out


def delivered(value: Any) -> bytes:
    """Everything the client got, as bytes, with every base64 payload decoded and unpacked."""
    parts = [json.dumps(value).encode()]

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, str) and k in ("blob", "data", "text"):
                    parts.extend(opened(x.encode("latin-1", "replace") if k == "text" else base64.b64decode(x)))
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(value)
    return b"\n".join(parts)


def dump(result: Any) -> Any:
    return result.model_dump(mode="json", exclude_none=True)


def payload_of(item: types.ContentBlock) -> str:
    """The base64 payload of an image or audio item, or of the blob an embedded resource item holds."""
    if item.type == "resource":
        assert isinstance(item.resource, types.BlobResourceContents)
        return item.resource.blob
    assert isinstance(item, (types.ImageContent, types.AudioContent))
    return item.data


def blob_of(contents: types.TextResourceContents | types.BlobResourceContents) -> str:
    """The base64 payload of a resource read that returned binary contents."""
    assert isinstance(contents, types.BlobResourceContents)
    return contents.blob


async def test_no_secret_file_reaches_the_client_through_read_media_file(gw: GatewayProcess, ws: Workspace) -> None:
    async with http_client(f"{gw.url}/mcp", gw.token) as c:
        for name, (_, secrets) in ws.files.items():
            result = await c.call_tool("fs__read_media_file", {"path": str(ws.root / name)})
            got = delivered(dump(result))
            for secret in secrets:
                assert secret.encode() not in got, (name, secret)
            notice = base64.b64decode(payload_of(result.content[0]))
            assert notice.startswith(b"[mcpwall withheld this content"), name


async def test_no_secret_file_reaches_the_client_through_read_text_file(gw: GatewayProcess, ws: Workspace) -> None:
    texts = ["id_rsa", "id_ed25519", ".env", "env.b64", "env.gz.b64", "key_tail.txt", "key_body.txt",
             "key_middle.txt", "ed_tail.txt", "env.xxd", "id_rsa.hexdump", "env.b32"]
    async with http_client(f"{gw.url}/mcp", gw.token) as c:
        for name in texts:
            result = await c.call_tool("fs__read_text_file", {"path": str(ws.root / name)})
            got = delivered(dump(result))
            for secret in ws.files[name][1]:
                assert secret.encode() not in got, (name, secret)
            first = result.content[0]
            assert isinstance(first, types.TextContent)
            assert "[REDACTED-" in first.text, name
        # several files in one result share the message's decoding budget, and each is masked
        result = await c.call_tool("fs__read_multiple_files",
                                   {"paths": [str(ws.root / n) for n in ("key_body.txt", "env.b64", "cert.pem")]})
        got = delivered(dump(result))
        assert not any(s.encode() in got for s in [*ws.rsa_lines, AWS_ID, AWS_SECRET])
        assert b"-----BEGIN CERTIFICATE-----" in got


async def test_the_plain_route_masks_a_blob_the_same_way(gw: GatewayProcess, ws: Workspace) -> None:
    r = gw.post("/fs", {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                        "params": {"name": "read_media_file", "arguments": {"path": str(ws.root / "env.gz")}}})
    assert r.status_code == 200
    got = delivered(r.json())
    assert AWS_ID.encode() not in got
    assert AWS_SECRET.encode() not in got


async def test_neither_the_ledger_previews_nor_its_stored_bodies_hold_the_secrets(gw: GatewayProcess,
                                                                                 ws: Workspace) -> None:
    async with http_client(f"{gw.url}/mcp", gw.token) as c:
        for name in ("id_rsa", "env.gz", "key_body.txt"):
            await c.call_tool("fs__read_media_file", {"path": str(ws.root / name)})
            await c.call_tool("fs__read_text_file", {"path": str(ws.root / name)})
    secrets = [AWS_ID, AWS_SECRET, *ws.rsa_lines]
    # The ledger commits in batches: the six rows are waited for by the clock (a loaded machine delays them).
    deadline = time.monotonic() + 30
    while True:
        with sqlite3.connect(gw.home / "ledger.db") as db:
            previews = [row[0] or "" for row in db.execute(
                "SELECT response_preview FROM tool_calls WHERE tool_name IN ('read_media_file', 'read_text_file')")]
            bodies = [bytes(row[0]) if isinstance(row[0], bytes) else str(row[0]).encode()
                      for row in db.execute("SELECT content FROM event_body_blobs")]
        if len(previews) >= 6 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert len(previews) >= 6
    stored = b"\n".join(b"\n".join(in_text(p.encode())) for p in [*previews, *map(bytes.decode, bodies)])
    for secret in secrets:
        assert secret.encode() not in stored, secret


@pytest.fixture(scope="module")
def web(ws: Workspace) -> Iterator[str]:
    """The workspace over HTTP on loopback, for server-everything's gzip tool to fetch from.

    (A `data:` URL holding the .env would not do: DLP now masks the base64-encoded AWS key in the
    tool's arguments, so the server never sees it.)
    """
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(ws.root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(5)


async def test_a_base64_credential_in_arguments_is_masked_before_the_server_sees_it(gw: GatewayProcess) -> None:
    uri = "data:text/plain;base64," + base64.b64encode(ENV).decode()
    # A legacy client: its own session. A 2026-07-28 client's is its principal's, which read this key
    # in an earlier test, and the exfiltration check would refuse the call before DLP masks it.
    async with http_client(f"{gw.url}/mcp", gw.token, mode="legacy") as c:
        result = await c.call_tool("everything__gzip-file-as-resource",
                                   {"name": "env.gz", "data": uri, "outputType": "resource"})
    assert result.is_error  # the masked URL no longer parses: the server fetched nothing


async def test_a_gzip_resource_from_server_everything_is_withheld_when_it_holds_a_secret(gw: GatewayProcess,
                                                                                        web: str) -> None:
    uri = f"{web}/.env"
    async with http_client(f"{gw.url}/mcp", gw.token) as c:
        result = await c.call_tool("everything__gzip-file-as-resource",
                                   {"name": "env.gz", "data": uri, "outputType": "resource"})
        assert not result.is_error, dump(result)
        got = delivered(dump(result))
        assert AWS_ID.encode() not in got
        assert AWS_SECRET.encode() not in got
    async with http_client(f"{gw.url}/mcp/everything", gw.token) as c:  # the resources/read path
        link = await c.call_tool("gzip-file-as-resource", {"name": "env2.gz", "data": uri, "outputType": "resourceLink"})
        links = [item.uri for item in link.content if item.type == "resource_link"]
        assert links, dump(link)
        read = await c.read_resource(str(links[0]))
        assert base64.b64decode(blob_of(read.contents[0])).startswith(b"[mcpwall withheld this content")
        got = delivered(dump(read))
        assert AWS_ID.encode() not in got
        assert AWS_SECRET.encode() not in got


async def test_benign_encoded_content_comes_back_byte_for_byte(gw: GatewayProcess, ws: Workspace) -> None:
    prose = b"Nothing secret: the build passed on all three platforms.\n" * 20
    async with http_client(f"{gw.url}/mcp", gw.token) as c:
        for name, data in ws.benign.items():
            result = await c.call_tool("fs__read_media_file", {"path": str(ws.root / name)})
            assert base64.b64decode(payload_of(result.content[0])) == data, name
        image = await c.call_tool("everything__get-tiny-image", {})
        assert [base64.b64decode(i.data)[:4] for i in image.content if i.type == "image"] == [b"\x89PNG"]
        blob = await c.read_resource("demo://resource/dynamic/blob/2")
        assert base64.b64decode(blob_of(blob.contents[0])).startswith(b"Resource 2: This is a base64 blob")
        packed = await c.call_tool("everything__gzip-file-as-resource", {
            "name": "notes.gz", "data": "data:text/plain;base64," + base64.b64encode(prose).decode(),
            "outputType": "resource"})
        res = next(i.resource for i in packed.content if i.type == "resource")
        assert gzip.decompress(base64.b64decode(blob_of(res))) == prose
