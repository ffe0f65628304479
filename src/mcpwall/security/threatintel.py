"""Threat intelligence: are the IPs, domains and URLs in a call known indicators of compromise?

Two sources, both in ThreatFox's formats (abuse.ch):

- `OfflineFeed`: the CSV export (`full.csv`, `recent.csv`, or the `.zip` they
  come in), read at start and re-read when the file changes, so lookups work
  without internet and cost a dictionary probe.
- `ThreatFoxClient`: the API (`POST https://threatfox-api.abuse.ch/api/v1/`,
  `{"query": "search_ioc", "search_term": ...}`, `Auth-Key` header), with a
  one-hour cache of answers (hits and misses), a 3-second timeout, and a short
  back-off after a failure. A failure is never an answer: the lookup returns
  None and the call goes on (threat intel never breaks a call).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import ipaddress
import logging
import os
import re
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpwall.policy import canonical_host
from mcpwall.security._json import Flat, strings

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("mcpwall.threatintel")

THREATFOX_API = "https://threatfox-api.abuse.ch/api/v1/"
MAX_INDICATORS = 32
#: Bare values ending in these are file names, not domains (`.md` is Moldova, `.py` Paraguay...).
_FILE_TLDS = frozenset({"py", "md", "js", "ts", "sh", "rs", "go", "rb", "pl", "json", "yaml", "yml", "txt",
                        "csv", "log", "html", "htm", "css", "zip", "tar", "gz", "exe", "dll", "so", "java", "kt",
                        "swift", "php", "lock", "toml", "ini", "cfg", "conf", "xml", "pdf", "png", "jpg", "jpeg",
                        "gif", "svg", "mov", "mp4", "mp3", "tsx", "jsx", "vue", "scss", "sql", "db", "bak", "tmp",
                        "env", "pem", "key", "crt", "cs", "cpp", "hpp", "cc", "h", "c", "ipynb", "rst", "wasm"})
_URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s\"'<>`]+", re.IGNORECASE)
_IP = re.compile(r"(?<![\d.])((?:\d{1,3}\.){3}\d{1,3})(?::(\d{1,5}))?(?![\d.])")
_DOMAIN = re.compile(r"(?<![\w@.-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{1,23})(?![\w.-]|@)",
                     re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Indicator:
    """An IP, domain or URL found in the arguments; `remote` says whether it is worth an API query."""

    kind: str
    value: str
    path: str
    remote: bool = True


def _public_ip(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).is_global
    except ValueError:
        return False


def normalize_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}".rstrip("/")


def extract(arguments: Any, flat: Flat | None = None) -> list[Indicator]:
    """Indicators in every string argument: URLs (and their hosts), public IPs, domains; `flat`: the
    arguments' strings when the caller has them (`_json.flatten`)."""
    out: dict[tuple[str, str], Indicator] = {}

    def add(ind: Indicator) -> None:
        if len(out) < MAX_INDICATORS and (ind.kind, ind.value) not in out:
            out[(ind.kind, ind.value)] = ind

    for path, _, text in strings(arguments) if flat is None else flat:
        if len(text) > 100_000:
            text = text[:100_000]
        for m in _URL.finditer(text):
            url = m.group(0).rstrip(".,;:)]}")
            add(Indicator("url", normalize_url(url), path))
            host = url.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
            host = canonical_host(host.rsplit(":", 1)[0] if host.count(":") == 1 else host)
            if _public_ip(host):
                add(Indicator("ip", host, path))
            elif "." in host and not host.replace(".", "").isdigit():
                add(Indicator("domain", host, path))
        bare = text.strip()
        for m in _IP.finditer(text):
            if all(int(o) < 256 for o in m.group(1).split(".")) and _public_ip(m.group(1)):
                add(Indicator("ip", m.group(1), path, remote=bare in (m.group(0), m.group(1))))
        if "." in text:
            for m in _DOMAIN.finditer(text):
                domain = m.group(1).lower()
                tld = domain.rsplit(".", 1)[-1]
                if tld.isdigit() or tld in _FILE_TLDS:
                    continue
                add(Indicator("domain", domain, path, remote=bare.lower() == domain))
    return list(out.values())


@dataclass(frozen=True, slots=True)
class Verdict:
    """A known-bad indicator: what matched, in which source, and what the source says about it."""

    indicator: str
    kind: str
    source: str
    threat_type: str = ""
    malware: str = ""
    confidence: int = 0
    ioc: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"indicator": self.indicator, "kind": self.kind, "source": self.source, "ioc": self.ioc,
                "threat_type": self.threat_type, "malware": self.malware, "confidence": self.confidence}


_COLUMNS = ("first_seen_utc", "ioc_id", "ioc_value", "ioc_type", "threat_type", "fk_malware", "malware_alias",
            "malware_printable", "last_seen_utc", "confidence_level", "is_compromised", "reference", "tags",
            "anonymous", "reporter")


class OfflineFeed:
    """IOCs from ThreatFox CSV exports, indexed by IP, IP:port, domain and URL."""

    def __init__(self, paths: Iterable[Path], min_confidence: int = 0) -> None:
        self.paths = [Path(p) for p in paths]
        self.min_confidence = min_confidence
        self.entries: dict[str, dict[str, Any]] = {}
        self._stamp: tuple[float, ...] = ()
        self._checked = 0.0

    def load(self) -> int:
        entries: dict[str, dict[str, Any]] = {}
        for path in self.paths:
            for row in self._rows(path):
                self._index(row, entries)
        self.entries = entries
        self._stamp = self._mtimes()
        log.info("threat intel: %d indicators from %s", len(entries), ", ".join(map(str, self.paths)))
        return len(entries)

    def _mtimes(self) -> tuple[float, ...]:
        stamps = []
        for p in self.paths:
            try:
                stamps.append(p.stat().st_mtime)
            except OSError:
                stamps.append(0.0)
        return tuple(stamps)

    def refresh(self, every_s: float = 30.0) -> None:
        """Re-read the files when they changed (checked at most every `every_s`)."""
        now = time.monotonic()
        if now - self._checked < every_s:
            return
        self._checked = now
        if self._mtimes() != self._stamp:
            with contextlib.suppress(OSError, ValueError):
                self.load()

    @staticmethod
    def _text(path: Path) -> str:
        data = path.read_bytes()
        if data[:4] == b"PK\x03\x04":
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = [n for n in archive.namelist() if n.lower().endswith((".csv", ".txt"))] or archive.namelist()
                data = archive.read(names[0])
        return data.decode("utf-8", "replace")

    def _rows(self, path: Path) -> Iterable[dict[str, str]]:
        columns: tuple[str, ...] = _COLUMNS
        lines: list[str] = []
        for line in self._text(path).splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            if stripped.startswith("#"):
                header = stripped.lstrip("# ").strip()
                if header.startswith('"first_seen_utc"') or header.startswith("first_seen_utc"):
                    columns = tuple(c.strip().strip('"') for c in next(csv.reader([header], skipinitialspace=True)))
                continue
            lines.append(line)
        for fields in csv.reader(lines, skipinitialspace=True):
            if not fields or fields[0] == "first_seen_utc":
                continue
            yield dict(zip(columns, (f.strip() for f in fields), strict=False))

    def _index(self, row: dict[str, str], entries: dict[str, dict[str, Any]]) -> None:
        value, kind = row.get("ioc_value", ""), row.get("ioc_type", "")
        try:
            confidence = int(row.get("confidence_level") or 0)
        except ValueError:
            confidence = 0
        if not value or confidence < self.min_confidence:
            return
        info = {"ioc": value, "threat_type": row.get("threat_type", ""), "confidence": confidence,
                "malware": row.get("malware_printable") or row.get("fk_malware", "")}
        if kind == "ip:port":
            entries.setdefault("ip:" + value.rsplit(":", 1)[0], info)
        elif kind == "domain":
            entries.setdefault("domain:" + value.lower().rstrip("."), info)
        elif kind == "url":
            entries.setdefault("url:" + normalize_url(value), info)

    def lookup(self, ind: Indicator) -> Verdict | None:
        keys = [f"{ind.kind}:{ind.value}"]
        if ind.kind == "domain":
            labels = ind.value.split(".")
            keys.extend("domain:" + ".".join(labels[i:]) for i in range(1, len(labels) - 1))
        for key in keys:
            info = self.entries.get(key)
            if info is not None:
                return Verdict(ind.value, ind.kind, "threatfox-feed", str(info["threat_type"]), str(info["malware"]),
                               int(info["confidence"]), str(info["ioc"]))
        return None

    def __len__(self) -> int:
        return len(self.entries)


class ThreatFoxClient:
    """`search_ioc` against a ThreatFox-compatible API, cached; failures answer None."""

    def __init__(self, url: str = THREATFOX_API, auth_key: str | None = None, timeout_s: float = 3.0,
                 cache_s: float = 3600.0, min_confidence: int = 50, backoff_s: float = 30.0) -> None:
        self.url = url
        self.auth_key = auth_key
        self.timeout_s = timeout_s
        self.cache_s = cache_s
        self.min_confidence = min_confidence
        self.backoff_s = backoff_s
        self._cache: dict[str, tuple[float, Verdict | None]] = {}
        self._down_until = 0.0
        self._client: httpx.AsyncClient | None = None
        self.queries = 0
        self.failures = 0
        self.cache_hits = 0

    def client(self) -> httpx.AsyncClient:
        import httpx  # here, not at import: `simulate` checks stages.threatintel and looks nothing up (issue 29)

        if self._client is None:
            headers = {"Auth-Key": self.auth_key} if self.auth_key else {}
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), headers=headers)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def cached(self, term: str) -> tuple[bool, Verdict | None]:
        hit = self._cache.get(term)
        if hit is not None and hit[0] > time.monotonic():
            self.cache_hits += 1
            return True, hit[1]
        return False, None

    async def lookup(self, ind: Indicator) -> Verdict | None:
        import httpx

        term = ind.value
        known, verdict = self.cached(term)
        if known:
            return verdict
        if time.monotonic() < self._down_until:
            return None
        self.queries += 1
        try:
            response = await asyncio.wait_for(
                self.client().post(self.url, json={"query": "search_ioc", "search_term": term}), self.timeout_s)
            response.raise_for_status()
            body = response.json()
        except (TimeoutError, httpx.HTTPError, ValueError, OSError) as exc:
            self.failures += 1
            self._down_until = time.monotonic() + self.backoff_s
            log.info("threat intel lookup of %s failed (%s); continuing without it", term, exc.__class__.__name__)
            return None
        usable, verdict = self._verdict(ind, body)
        if usable:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[term] = (time.monotonic() + self.cache_s, verdict)
        return verdict

    def _verdict(self, ind: Indicator, body: Any) -> tuple[bool, Verdict | None]:
        """(usable, verdict): a usable answer is cached, hit or miss; an unusable one is not."""
        if not isinstance(body, dict):
            return False, None
        status = body.get("query_status")
        if status == "no_result":
            return True, None
        if status != "ok" or not isinstance(body.get("data"), list):
            log.info("threat intel: ThreatFox answered %r for %s", status, ind.value)
            return False, None
        for entry in body["data"]:
            if not isinstance(entry, dict):
                continue
            ioc = str(entry.get("ioc", ""))
            kind = str(entry.get("ioc_type", ""))
            same = (kind == "url" and normalize_url(ioc) == (ind.value if ind.kind == "url" else "")) or \
                (kind == "ip:port" and ioc.rsplit(":", 1)[0] == ind.value) or \
                (kind == "domain" and (ioc.lower() == ind.value or ind.value.endswith("." + ioc.lower())))
            try:
                confidence = int(entry.get("confidence_level") or 0)
            except (TypeError, ValueError):
                confidence = 0
            if same and confidence >= self.min_confidence:
                return True, Verdict(ind.value, ind.kind, "threatfox-api", str(entry.get("threat_type", "")),
                                     str(entry.get("malware_printable") or entry.get("malware", "")), confidence, ioc)
        return True, None


def auth_key_from_env(name: str) -> str | None:
    return os.environ.get(name) or None


__all__ = ["MAX_INDICATORS", "THREATFOX_API", "Indicator", "OfflineFeed", "ThreatFoxClient", "Verdict",
           "auth_key_from_env", "extract", "normalize_url"]
