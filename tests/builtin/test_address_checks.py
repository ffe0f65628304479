"""Where the built-in HTTP tools may connect: adversarial URLs against the allowlist and address check.

Strategy: `check_url` with the system resolver on every numeric and named spelling of a
loopback, private, link-local (cloud metadata) or unspecified address that a resolver
accepts; with an injected resolver (the only thing mocked: this machine has no DNS for
arbitrary names) for names that resolve to 127.0.0.1 or 169.254.169.254, or to a mix of
public and private addresses. Allowlist semantics: listed hosts only, wildcards for
subdomains, private addresses only by an explicit IP or network entry.
"""

from __future__ import annotations

import pytest

from mcpwall.builtin import HostPolicy, Resolver, URLRefused, check_url

pytestmark = pytest.mark.anyio

OPEN = HostPolicy()


def pinned(mapping: dict[str, list[str]]) -> Resolver:
    async def resolve(host: str, port: int) -> list[str]:
        return mapping[host]

    return resolve


@pytest.mark.parametrize("url", [
    "http://localhost/", "http://LOCALHOST./", "http://127.0.0.1/", "http://127.1/", "http://2130706433/",
    "http://0x7f000001/", "http://0177.0.0.1/", "http://0.0.0.0/", "http://[::1]/", "http://[::]/",
    "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/", "http://[::ffff:169.254.169.254]/", "http://10.0.0.1/", "http://192.168.1.1/",
    "http://172.16.0.1/", "http://100.64.0.1/", "http://224.0.0.1/", "http://[fd00::1]/", "http://[fe80::1]/",
    "http://[2002:7f00:1::]/",  # 6to4 around 127.0.0.1
])
async def test_loopback_private_and_link_local_addresses_are_refused_in_every_spelling(url: str) -> None:
    with pytest.raises(URLRefused, match=r"private, loopback or link-local|cannot resolve"):
        await check_url(url, OPEN)


async def test_a_name_that_resolves_to_the_metadata_address_is_refused() -> None:
    resolver = pinned({"metadata.attacker.example": ["169.254.169.254"]})
    with pytest.raises(URLRefused, match=r"169\.254\.169\.254"):
        await check_url("http://metadata.attacker.example/latest/", OPEN, resolver)


async def test_a_name_that_resolves_to_loopback_is_refused() -> None:
    resolver = pinned({"rebind.attacker.example": ["127.0.0.1"]})
    with pytest.raises(URLRefused, match=r"127\.0\.0\.1"):
        await check_url("https://rebind.attacker.example/", OPEN, resolver)


async def test_a_name_with_one_private_address_among_public_ones_is_refused() -> None:
    resolver = pinned({"mixed.example": ["93.184.216.34", "10.1.2.3"]})
    with pytest.raises(URLRefused, match=r"10\.1\.2\.3"):
        await check_url("http://mixed.example/", OPEN, resolver)


async def test_a_public_name_passes_and_the_connection_is_pinned_to_the_checked_address() -> None:
    resolver = pinned({"example.com": ["93.184.216.34"]})
    target = await check_url("https://example.com/path?q=1", OPEN, resolver)
    assert target.address == "93.184.216.34"
    assert (target.host, target.port, target.scheme) == ("example.com", 443, "https")


async def test_a_listed_host_name_never_makes_a_private_address_acceptable() -> None:
    policy = HostPolicy(["intranet.example", "*.corp.example"])
    resolver = pinned({"intranet.example": ["10.0.0.5"], "wiki.corp.example": ["10.0.0.6"]})
    for url in ("http://intranet.example/", "http://wiki.corp.example/"):
        with pytest.raises(URLRefused, match="private"):
            await check_url(url, policy, resolver)


async def test_an_ip_or_network_entry_allows_exactly_those_private_addresses() -> None:
    policy = HostPolicy(["127.0.0.1", "10.0.0.0/8", "intranet.example"])
    assert (await check_url("http://127.0.0.1:8080/", policy)).address == "127.0.0.1"
    resolver = pinned({"intranet.example": ["10.9.9.9"]})
    assert (await check_url("http://intranet.example/", policy, resolver)).address == "10.9.9.9"
    with pytest.raises(URLRefused):
        await check_url("http://169.254.169.254/", policy)
    with pytest.raises(URLRefused, match="allowlist"):
        await check_url("http://localhost/", policy)  # the name is not listed


async def test_a_non_empty_allowlist_refuses_every_other_host() -> None:
    policy = HostPolicy(["docs.python.org", "*.example.com"])
    resolver = pinned({"docs.python.org": ["151.101.0.223"], "api.example.com": ["93.184.216.34"],
                       "example.com": ["93.184.216.34"], "evil.com": ["1.2.3.4"]})
    await check_url("https://docs.python.org/3/", policy, resolver)
    await check_url("https://api.example.com/", policy, resolver)
    await check_url("https://example.com/", policy, resolver)
    for url in ("https://evil.com/", "https://example.com.evil.com/", "https://docs.python.org.evil.com/"):
        with pytest.raises(URLRefused, match="allowlist"):
            await check_url(url, policy, pinned({"evil.com": ["1.2.3.4"], "example.com.evil.com": ["1.2.3.4"],
                                                 "docs.python.org.evil.com": ["1.2.3.4"]}))


async def test_the_corp_allowlist_constrains_the_profiles() -> None:
    policy = HostPolicy(["*"], corp_hosts=["*.corp.example"])
    resolver = pinned({"a.corp.example": ["93.184.216.34"], "elsewhere.example": ["93.184.216.34"]})
    await check_url("https://a.corp.example/", policy, resolver)
    with pytest.raises(URLRefused, match="allowlist"):
        await check_url("https://elsewhere.example/", policy, resolver)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/", "gopher://x/", "/relative",
                                 "http:///nohost", "http://user:pw@example.com/", "http://exa mple.com:99999/"])
async def test_urls_that_are_not_plain_http_are_refused(url: str) -> None:
    with pytest.raises(URLRefused):
        await check_url(url, OPEN, pinned({"example.com": ["93.184.216.34"]}))
