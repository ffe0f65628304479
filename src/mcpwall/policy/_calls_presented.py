"""Credentials presented, not leaked: a token sent in its credential slot to the API that issued it (issue 25).

`secrets_out` names every secret in a call's arguments, and `block-secrets-out` refuses them. But an agent's
everyday call to an API carries that API's own credential: `Authorization: token ghp_...` to api.github.com,
`x-api-key: sk-ant-...` to api.anthropic.com, `?key=AIza...` to googleapis.com, `git clone
https://x-access-token:ghp_...@github.com/...`, a database URL's password to localhost. The credential goes
where it is already known, and refusing it stopped a fifth of the everyday API calls of
tests/security/test_calls_benign_everyday.py.

`presented` drops such a secret from a call's facts when all of these hold:
- it is in a credential slot and nowhere else in its text: the value of an argument whose key names one
  (`Authorization`, `x-api-key`, `token`, `api_key`...), or in a command line or URL a header of that name,
  a URL's userinfo, `-u user:pass`, a `key=`/`access_token=`-style query parameter (a `q=` is not one);
- every host the call reaches is its issuer's (`_ISSUERS`, by name or subdomain: `api.github.com.x.example` is
  not GitHub's) or this machine (any credential may go to localhost); a call that reaches no host counts its
  server's or tool's name (a `github` server's `token` argument), and a call that mails anyone keeps them all;
- it is a credential that is presented at all: a private key, a seed phrase or an environment dump never is;
- nothing in the call sends the request elsewhere than its URL names (a proxy, curl's `--resolve`).
What is left (a token in a message, a file's content, a search, a query string's `q`, a body posted elsewhere,
one issuer's token sent to another's API) stays a secret going out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from mcpwall.policy._calls_args import HOSTS, SECRETS, SINKS, tool_words
from mcpwall.policy._calls_net import url_host
from mcpwall.policy._calls_secrets import secret_facts

#: The hosts (a name or its subdomains) that issue each kind of credential, and the name a server or tool
#: for that API has.
_ISSUERS: Final[dict[str, tuple[tuple[str, ...], str]]] = {
    "github-token": (("github.com", "githubusercontent.com", "ghcr.io"), "github"),
    "openai-key": (("openai.com",), "openai"),
    "anthropic-key": (("anthropic.com",), "anthropic"),
    "slack-token": (("slack.com",), "slack"),
    "stripe-key": (("stripe.com",), "stripe"),
    "google-api-key": (("googleapis.com", "google.com"), "google"),
    "aws-access-key": (("amazonaws.com",), "aws"),
}
#: The issuers of `service-token`s (`mcpwall.security._secrets`), by the token's documented prefix; a token of a
#: service whose host varies (Vault, Databricks) or that is never presented in a header (age keys) has none.
_SERVICES: Final[tuple[tuple[re.Pattern[str], tuple[str, ...], str], ...]] = (
    (re.compile(r"gl(?:pat|dt|rt|ptt|cbt|soat|ft)-"), ("gitlab.com",), "gitlab"),
    (re.compile(r"npm_[A-Za-z0-9]{36}"), ("npmjs.org", "npmjs.com"), "npm"),
    (re.compile(r"pypi-AgEI"), ("pypi.org",), "pypi"),
    (re.compile(r"SG\.[A-Za-z0-9_-]{22}\."), ("sendgrid.com",), "sendgrid"),
    (re.compile(r"hf_[A-Za-z]{34}"), ("huggingface.co",), "huggingface"),
    (re.compile(r"shp(?:at|ca|pa|ss)_"), ("myshopify.com", "shopify.com"), "shopify"),
    (re.compile(r"do[opr]_v1_"), ("digitalocean.com",), "digitalocean"),
    (re.compile(r"dp\.(?:pt|st|sa|ct)\."), ("doppler.com",), "doppler"),
    (re.compile(r"lin_api_"), ("linear.app",), "linear"),
    (re.compile(r"xapp-\d-"), ("slack.com",), "slack"),
    (re.compile(r"gl(?:sa|c)_"), ("grafana.net", "grafana.com"), "grafana"),
    (re.compile(r"[0-9a-f]{32}-us\d"), ("api.mailchimp.com",), "mailchimp"),
)
#: Credentials with no issuer the text names: presented only to this machine.
_LOCAL_ONLY: Final = frozenset({"jwt", "api-key", "secret", "db-password", "url-secret", "high-entropy"})
_SLOT_KEY: Final = re.compile(
    r"(?i)^(?:(?:proxy-)?authorization|x-api-key|api[-_]?key|apikey|x-goog-api-key|x-auth-token|auth[-_]?token|"
    r"access[-_]?token|private-token|bearer|token|auth|key|password|passwd|client[-_]secret)$")
#: A credential's slot inside a text: a header of such a name, a URL's userinfo, curl's `-u`, a query parameter.
_SLOTS: Final = re.compile(
    r"(?i)\b(?:(?:proxy-)?authorization|x-api-key|api-key|x-goog-api-key|x-auth-token|private-token)\s*:\s*"
    r"([^'\"\n]+)|\b([a-z][a-z0-9+.-]*://[^/@\s'\"]+@[^\s/'\"]*)|(?:^|\s)(?:-u|--user)\s*['\"]?([^\s'\"]+)|"
    r"[?&](?:key|api_?key|access_token|token|auth|x-amz-credential|x-amz-security-token)=([^&\s#'\"]+)")
#: What sends a request elsewhere than its URL's host: a proxy (an option, an argument, `HTTPS_PROXY=`), curl's
#: `--resolve`/`--connect-to` pinning the name to another address.
_ELSEWHERE: Final = re.compile(r"(?i:proxy|--resolve\b|--connect-to\b|--socks|--doh-url)|(?:^|\s)-x\s")
_URLS: Final = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+")
_LOCAL: Final = re.compile(r"^(?:localhost|[^.]+\.localhost|127(?:\.\d{1,3}){3}|::1)$")


def _issuer(kind: str, text: str) -> tuple[tuple[str, ...], str] | None:
    """The hosts and the API's name that issue a secret of `kind` found in `text`, if one is known."""
    found = _ISSUERS.get(kind)
    if found is not None or kind != "service-token":
        return found
    issuers = {(hosts, api) for pattern, hosts, api in _SERVICES if pattern.search(text) is not None}
    return issuers.pop() if len(issuers) == 1 else None  # two services' tokens in one text: neither's


def _issued(domains: tuple[str, ...], host: str) -> bool:
    if _LOCAL.match(host) is not None:
        return True
    return any(host == d or host.endswith("." + d) for d in domains)


def _slotted(key: str, text: str) -> tuple[set[str], set[str]]:
    """The kinds of secret in `text`'s credential slots, and those elsewhere in it."""
    if _SLOT_KEY.match(key) is not None:
        return set(secret_facts(text)), set()
    slots: set[str] = set()
    rest = text
    for m in _SLOTS.finditer(text):
        value = next(g for g in m.groups() if g is not None)
        slots.update(secret_facts(value))
        rest = rest.replace(value, " ")
    return slots, set(secret_facts(rest)) if slots else set()


def presented(name: str, server: str, derived: list[tuple[int, str, str]],
              leaves: Iterable[tuple[str, str, str, tuple[str, ...], str]]) -> list[tuple[int, str, str]]:
    """`derived` without the secrets a call presents to their issuer (see the module's docstring)."""
    if any(i == SINKS and t.startswith("mail ") for i, t, _ in derived):
        return derived
    texts = {path: (key, text) for path, key, text, _, _ in leaves}
    if any(_ELSEWHERE.search(key) is not None or _ELSEWHERE.search(text) is not None for key, text in texts.values()):
        return derived  # a proxy or a pinned address sends it somewhere the URL does not name
    hosts = {t for i, t, _ in derived if i == HOSTS}
    for _, text in texts.values():
        if "://" in text:
            hosts.update(url_host(u) for u in _URLS.findall(text))
    hosts.discard("")
    names = tool_words(name) | {w.lower() for w in re.findall(r"[A-Za-z]+", server)}
    dropped: set[tuple[str, str]] = set()
    slotted: dict[str, tuple[set[str], set[str]]] = {}
    for index, kind, path in derived:
        if index != SECRETS:
            continue
        base = kind.removesuffix("@sink")
        leaf = texts.get(path)
        if leaf is None:
            continue
        issuer = None if base in _LOCAL_ONLY else _issuer(base, leaf[1])
        if issuer is None and base not in _LOCAL_ONLY:
            continue
        domains = issuer[0] if issuer is not None else ()
        if hosts:
            if not all(_issued(domains, h) for h in hosts):
                continue
        elif issuer is None or issuer[1] not in names:
            continue
        found = slotted.get(path)
        if found is None:
            found = slotted[path] = _slotted(*leaf)
        in_slot, elsewhere = found
        if base in in_slot and base not in elsewhere:
            dropped.add((kind, path))
    if not dropped:
        return derived
    return [d for d in derived if not (d[0] == SECRETS and (d[1], d[2]) in dropped)]


__all__ = ["presented"]
