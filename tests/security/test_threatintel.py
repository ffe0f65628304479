"""Threat intel: IOC extraction, the offline ThreatFox CSV feed, and the API over its wire format.

Strategy: extraction is checked on URLs, IPs and domains in realistic arguments, with file names
and private addresses that must not become lookups. The offline feed parses a ThreatFox CSV
export exactly as abuse.ch writes it (commented header, quoted fields with a space after each
comma) and the same file zipped. The API is a local fake ThreatFox server: hits, misses,
5xx, timeouts and garbage never break a lookup, answers are cached, failures back off.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpwall.security.threatintel import Indicator, OfflineFeed, ThreatFoxClient, extract
from tests.fakes.apis import THREATFOX_MISS, Answer, FakeAPI, threatfox_hit

pytestmark = pytest.mark.anyio

EXPORT = '''\
################################################################
# ThreatFox IOCs: recent additions - CSV format                #
# Last updated: 2026-07-04 22:19:04 UTC                        #
#                                                              #
# Terms Of Use: https://threatfox.abuse.ch/faq/#tos            #
################################################################
#
# "first_seen_utc","ioc_id","ioc_value","ioc_type","threat_type","fk_malware","malware_alias","malware_printable","last_seen_utc","confidence_level","is_compromised","reference","tags","anonymous","reporter"
"2026-07-04 22:19:04", "1844855", "dazayse.hi-lo.bet", "domain", "payload_delivery", "js.clearfake", "None", "ClearFake", "", "100", "False", "None", "ClearFake,windows", "1", "anonymous"
"2026-07-04 21:46:30", "1844853", "64.227.143.36:5555", "ip:port", "botnet_cc", "win.cobalt_strike", "Agentemis,BEACON,CobaltStrike,cobeacon", "Cobalt Strike", "2026-07-04 22:46:23", "75", "False", "None", "CobaltStrike", "0", "drb_ra"
"2026-07-04 21:30:00", "1844850", "https://wps-fake.example/x64/setup.zip", "url", "payload_delivery", "win.vidar", "None", "Vidar", "", "90", "False", "None", "None", "0", "Grim"
"2026-07-04 21:00:00", "1844849", "low-confidence.example", "domain", "botnet_cc", "win.x", "None", "X", "", "10", "False", "None", "None", "0", "r"
"2026-07-04 20:00:00", "1844848", "3dd25cbfe76db155615283f905992030468f3da9", "sha1_hash", "payload", "win.vidar", "None", "Vidar", "", "95", "False", "None", "None", "0", "Grim"
# Number of entries: 5
'''


def test_indicators_are_extracted_from_urls_ips_and_domains() -> None:
    found = extract({"url": "https://Evil.Example.com:8443/path?q=1", "cmd": "curl 64.227.143.36:5555/x",
                     "note": "contact c2.bad-host.net today", "file": "README.md", "script": "main.py",
                     "local": "http://127.0.0.1/x", "mail": "me@example.org", "private": "10.1.2.3"})
    kinds = {(i.kind, i.value) for i in found}
    assert ("url", "https://evil.example.com:8443/path?q=1") in kinds
    assert ("domain", "evil.example.com") in kinds
    assert ("ip", "64.227.143.36") in kinds
    assert ("domain", "c2.bad-host.net") in kinds
    assert not any(v in ("readme.md", "main.py", "127.0.0.1", "10.1.2.3", "example.org") for _, v in kinds)
    remote = {i.value for i in found if i.remote}
    assert "c2.bad-host.net" not in remote  # a domain inside prose is checked offline only


def _feed(tmp_path: Path, data: bytes, name: str = "threatfox.csv") -> OfflineFeed:
    path = tmp_path / name
    path.write_bytes(data)
    feed = OfflineFeed([path], min_confidence=50)
    feed.load()
    return feed


@pytest.mark.parametrize("zipped", [False, True])
def test_the_offline_feed_reads_threatfox_exports(tmp_path: Path, zipped: bool) -> None:
    data = EXPORT.encode()
    if zipped:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("full.csv", data)
        data = buf.getvalue()
    feed = _feed(tmp_path, data, "full.csv.zip" if zipped else "recent.csv")
    assert len(feed) == 3  # the low-confidence row and the hash are not indexed
    hit = feed.lookup(Indicator("ip", "64.227.143.36", "a"))
    assert hit is not None
    assert hit.malware == "Cobalt Strike"
    assert hit.threat_type == "botnet_cc"
    assert feed.lookup(Indicator("domain", "sub.dazayse.hi-lo.bet", "a")) is not None  # subdomain of an IOC
    assert feed.lookup(Indicator("url", "https://wps-fake.example/x64/setup.zip", "a")) is not None
    assert feed.lookup(Indicator("domain", "low-confidence.example", "a")) is None
    assert feed.lookup(Indicator("domain", "hi-lo.bet", "a")) is None  # a parent is not the IOC
    assert feed.lookup(Indicator("ip", "64.227.143.37", "a")) is None


def test_the_feed_is_reread_when_the_file_changes(tmp_path: Path) -> None:
    feed = _feed(tmp_path, EXPORT.encode())
    path = feed.paths[0]
    path.write_text(EXPORT.replace("64.227.143.36", "198.51.100.9"))
    import os
    os.utime(path, (1, 1))
    feed.refresh(every_s=0)
    assert feed.lookup(Indicator("ip", "198.51.100.9", "a")) is not None


@pytest.fixture
def threatfox() -> Iterator[FakeAPI]:
    server = FakeAPI(lambda seen: Answer(200, THREATFOX_MISS))
    yield server
    server.stop()


async def test_the_api_is_queried_with_search_ioc_and_its_answers_are_cached(threatfox: FakeAPI) -> None:
    def answer(seen: object) -> Answer:
        term = seen.body["search_term"]  # type: ignore[attr-defined]
        return Answer(200, threatfox_hit("139.180.203.104:443", "ip:port") if term == "139.180.203.104"
                      else THREATFOX_MISS)
    threatfox.handler = answer
    client = ThreatFoxClient(f"{threatfox.url}/api/v1/", auth_key="k-123")
    try:
        hit = await client.lookup(Indicator("ip", "139.180.203.104", "a"))
        again = await client.lookup(Indicator("ip", "139.180.203.104", "a"))
        miss = await client.lookup(Indicator("domain", "clean.example", "a"))
        await client.lookup(Indicator("domain", "clean.example", "a"))
    finally:
        await client.aclose()
    assert hit is not None
    assert hit == again
    assert hit.source == "threatfox-api"
    assert hit.confidence == 100
    assert miss is None
    assert len(threatfox.requests) == 2  # one per term: hits and misses are cached
    seen = threatfox.requests[0]
    assert seen.path == "/api/v1/"
    assert seen.body == {"query": "search_ioc", "search_term": "139.180.203.104"}
    assert seen.headers["auth-key"] == "k-123"


async def test_a_url_ioc_on_a_big_host_does_not_condemn_the_host(threatfox: FakeAPI) -> None:
    threatfox.handler = lambda seen: Answer(200, threatfox_hit("https://github.com/evil/repo/mal.exe", "url"))
    client = ThreatFoxClient(f"{threatfox.url}/api/v1/")
    try:
        assert await client.lookup(Indicator("domain", "github.com", "a")) is None
        assert await client.lookup(Indicator("url", "https://github.com/evil/repo/mal.exe", "a")) is not None
    finally:
        await client.aclose()


@pytest.mark.parametrize("answer", [
    Answer(503, {"error": "maintenance"}),
    Answer(200, raw=b"not json"),
    Answer(200, {"query_status": "unknown_auth_key"}),
    Answer(200, THREATFOX_MISS, delay_s=1.5),
])
async def test_failures_and_timeouts_never_break_a_lookup_and_back_off(threatfox: FakeAPI, answer: Answer) -> None:
    threatfox.handler = lambda seen: answer
    client = ThreatFoxClient(f"{threatfox.url}/api/v1/", timeout_s=0.3, backoff_s=60)
    try:
        assert await client.lookup(Indicator("domain", "a.example", "a")) is None
        first = len(threatfox.requests)
        assert await client.lookup(Indicator("domain", "b.example", "a")) is None
    finally:
        await client.aclose()
    if answer.status != 200 or answer.raw is not None or answer.delay_s:
        assert client.failures == 1
        assert len(threatfox.requests) == first


async def test_an_unreachable_api_is_just_no_answer() -> None:
    client = ThreatFoxClient("http://127.0.0.1:9/api/v1/", timeout_s=0.5)
    try:
        assert await client.lookup(Indicator("domain", "a.example", "a")) is None
    finally:
        await client.aclose()
