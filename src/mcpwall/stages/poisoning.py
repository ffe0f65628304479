"""The poisoning stage: act on what `mcpwall.security.poisoning` finds in definitions and results.

Definitions (tools, prompts, resources) are scanned when they are listed or
called, against every tool every configured server offers (for collisions,
look-alikes and shadowing). Each finding kind maps to an action:

- `warn`: logged and recorded in the ledger notes; the tool stays usable.
- `ask`: each call is held for a person (through the approval service), denied
  when no approval channel runs.
- `block` / `hide`: the tool is not listed (`Components.tool_filters`) and a call
  to it is denied (-32001). A poisoned description does its harm when it is
  *listed* (the client pastes it into the model's context), so hiding is the
  defence; the two names are synonyms.
- `allow`: ignored.

Tool results are scanned for instructions aimed at the agent: `warn`,
`redact` (the offending lines are replaced by a marker) or `block` (the result
is replaced by a -32001 error). ANSI escapes and invisible characters are
always stripped from results and listed definitions.

In audit mode nothing is hidden, held, redacted or blocked: findings are
logged and recorded with the action enforce mode would have taken.

    stages:
      poisoning:
        actions: {preference_manipulation: block, name_collision: allow}
        results: redact          # warn | redact | block
        trusted: [fs/read_file]  # SERVER/NAME or SERVER/* exempt from definition findings
        maxDescription: 4096
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
from collections.abc import Mapping
from typing import Any

import orjson

from mcpwall.errors import ConfigError
from mcpwall.pipeline import Holder, Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode, Message, error
from mcpwall.protocol.naming import resource_owner, split
from mcpwall.security import poisoning as _scan
from mcpwall.security._poisoning_chars import clean as _clean_text
from mcpwall.security._poisoning_copies import copy_key
from mcpwall.security.poisoning import (
    Finding,
    PeerIndex,
    sanitize,
    scan_prompt,
    scan_result,
    scan_tool,
)
from mcpwall.stages._components import Components

log = logging.getLogger("mcpwall.poisoning")

DEFINITION_ACTIONS = ("allow", "warn", "ask", "block", "hide")
RESULT_ACTIONS = ("allow", "warn", "redact", "block")
#: Enforce-mode defaults: a kind maps to one action or to one per severity.
DEFAULT_ACTIONS: dict[str, str | dict[str, str]] = {
    "hidden_instructions": "block",
    "tool_shadowing": "block",
    "context_harvesting": "block",
    "ansi_escape": "block",
    "invisible_unicode": {"high": "block", "medium": "warn", "low": "warn"},
    "lookalike_name": {"high": "block", "medium": "warn", "low": "warn"},
    "preference_manipulation": "warn",
    "name_collision": "warn",
    "oversized_description": "warn",
    "unscannable_definition": "block",
    # a tool that says it steals, destroys or persists is hidden; a softer claim (deleting all files) warns
    "capability": {"high": "block", "medium": "warn", "low": "warn"},
    # both copies are reported: hiding either would let any server hide another's tool by copying it
    "copied_description": "warn",
}
_STRENGTH = {"allow": 0, "warn": 1, "ask": 2, "hide": 3, "block": 3}
_KEYS = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources"}
_CALLS = {"tools/call": "tools", "prompts/get": "prompts", "resources/read": "resources"}
#: What else a server says to the model: its instructions, its resource templates' descriptions.
_SCREENED = frozenset({"initialize", "resources/templates/list"})


class PoisoningConfig:
    """`stages.poisoning` checked once, with a clear error for anything unknown."""

    def __init__(self, section: Mapping[str, Any]) -> None:
        unknown = set(section) - {"enabled", "actions", "results", "trusted", "maxDescription", "strip"}
        if unknown:
            raise ConfigError(f"stages.poisoning: unknown key(s) {', '.join(sorted(unknown))}")
        self.actions: dict[str, str | dict[str, str]] = dict(DEFAULT_ACTIONS)
        for kind, action in (section.get("actions") or {}).items():
            if kind not in _scan.KINDS or kind in _scan.RESULT_KINDS:
                raise ConfigError(f"stages.poisoning.actions: unknown finding kind {kind!r}; "
                                  f"known: {', '.join(k for k in _scan.KINDS if k not in _scan.RESULT_KINDS)}")
            if isinstance(action, dict):
                for sev, act in action.items():
                    _check(f"stages.poisoning.actions.{kind}.{sev}", act, DEFINITION_ACTIONS)
                    if sev not in _scan.SEVERITIES:
                        raise ConfigError(f"stages.poisoning.actions.{kind}: unknown severity {sev!r}")
                self.actions[kind] = {str(k): str(v) for k, v in action.items()}
            else:
                self.actions[kind] = _check(f"stages.poisoning.actions.{kind}", action, DEFINITION_ACTIONS)
        self.results = _check("stages.poisoning.results", section.get("results", "redact"), RESULT_ACTIONS)
        trusted = section.get("trusted") or []
        if not isinstance(trusted, list) or not all(isinstance(t, str) and "/" in t for t in trusted):
            raise ConfigError("stages.poisoning.trusted: a list of SERVER/NAME patterns")
        self.trusted = [str(t) for t in trusted]
        self.max_description = int(section.get("maxDescription", _scan.DEFAULT_MAX_DESCRIPTION))
        self.strip = bool(section.get("strip", True))

    def action_for(self, finding: Finding) -> str:
        action = self.actions.get(finding.kind, "warn")
        if isinstance(action, dict):
            return action.get(finding.severity, "warn")
        return action

    def is_trusted(self, server: str, name: str) -> bool:
        return any(fnmatch.fnmatchcase(f"{server}/{name}", pattern) for pattern in self.trusted)


def _check(where: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return str(value)


class Verdict:
    """What to do about one definition: the strongest action its findings call for."""

    __slots__ = ("action", "findings")

    def __init__(self, findings: list[Finding], config: PoisoningConfig) -> None:
        self.findings = findings
        self.action = max((config.action_for(f) for f in findings), key=_STRENGTH.__getitem__, default="allow")

    def reasons(self) -> list[str]:
        return [f"{f.kind} ({f.severity}) in {f.where}: {f.evidence}" for f in self.findings]


class PoisoningStage(Stage):
    name = "poisoning"

    def __init__(self, config: PoisoningConfig, approvals: Holder | None = None) -> None:
        self.config = config
        #: the approval service that holds an `ask` (`Components.approvals`); None: asks are denied
        self.approvals = approvals
        self._cache: dict[tuple[str, ...], Verdict] = {}
        self._warned: set[tuple[str, ...]] = set()
        self._index: tuple[str, PeerIndex] | None = None
        self._peer_memo: tuple[tuple[tuple[str, dict[str, Any], int], ...],
                               tuple[dict[str, list[str]], str]] | None = None
        #: id of a catalog entry -> (the entry, its digest); the entry is held so its id is not reused
        self._digests: dict[int, tuple[Mapping[str, Any], str]] = {}
        self.counts: dict[str, int] = {"hidden": 0, "blocked": 0, "warned": 0, "results_flagged": 0,
                                       "results_redacted": 0, "results_stripped": 0}
        self.gateway: Any = None

    # ------------------------------------------------------------------ wiring

    def bind(self, gateway: Any) -> None:
        self.gateway = gateway

    def _enforcing(self) -> bool:
        return self.gateway is None or self.gateway.policy.current.mode != "audit"

    def _peers(self) -> dict[str, list[str]]:
        servers = getattr(self.gateway, "servers", {}) or {}
        return {name: list(s.catalog.tools) for name, s in servers.items()}

    def _definitions(self) -> dict[str, list[dict[str, Any]]]:
        """Every server's tools as listed, for the copied-description check across servers."""
        servers = getattr(self.gateway, "servers", {}) or {}
        return {name: [{**d, "name": n} for n, d in s.catalog.tools.items() if isinstance(d, dict)]
                for name, s in servers.items()}

    # ------------------------------------------------------------------ definitions

    def peer_set(self) -> tuple[dict[str, list[str]], str]:
        """Every server's tool names, and a digest of them (verdicts are cached per peer set).

        Catalogs are replaced whole on refresh and only grow in place, so their identities and
        sizes tell when the names may have changed."""
        servers: dict[str, Any] = getattr(self.gateway, "servers", None) or {}
        memo = self._peer_memo
        if memo is not None and len(memo[0]) == len(servers):
            # (a plain loop over a typed dict: asked on every call; compiled, a generator passed to
            # all() is a list first, and zip() a Python call)
            held = memo[0]
            same = True
            for i, (name, s) in enumerate(servers.items()):
                now = s.catalog.tools
                entry = held[i]
                if entry[0] != name or entry[1] is not now or entry[2] != len(now):
                    same = False
                    break
            if same:
                return memo[1]
        # the memo holds the dicts themselves, so an id cannot be reused by a newer catalog
        key = tuple((name, s.catalog.tools, len(s.catalog.tools)) for name, s in servers.items())
        peers = self._peers()
        # the descriptions count too (a copy appears when a peer's description changes), by their copy keys
        copies = sorted((s, t["name"], copy_key(t) or "") for s, tools in self._definitions().items() for t in tools)
        value = peers, hashlib.sha256(orjson.dumps([sorted((s, sorted(n)) for s, n in peers.items()),
                                                    copies])).hexdigest()
        self._peer_memo = (key, value)
        return value

    def verdict(self, server: str, key: str, name: str, item: Mapping[str, Any],
                peer_set: tuple[dict[str, list[str]], str] | None = None, digest: str | None = None) -> Verdict:
        """The verdict on one listed tool, prompt or resource (cached per definition and peer set);
        `digest`: the item's `_digest`, when the caller has it already."""
        if self.config.is_trusted(server, name):
            return Verdict([], self.config)
        peers, peer_sig = (peer_set or self.peer_set()) if key == "tools" else ({}, "")
        if digest is None:
            digest = _digest(item)
        cache_key = (server, key, name, digest, peer_sig)
        cached = self._cache.get(cache_key) if digest else None
        if cached is not None:
            return cached
        if key == "tools":
            if self._index is None or self._index[0] != peer_sig:
                self._index = (peer_sig, PeerIndex(peers, self._definitions()))
            findings = scan_tool({**item, "name": name}, server=server, index=self._index[1],
                                 max_description=self.config.max_description)
        else:
            # a resource is named by its URI here; its own `name` field is read as it is
            findings = scan_prompt(item, server=server, label=name, max_description=self.config.max_description)
        if len(self._cache) > 8192:
            self._cache.clear()
        verdict = Verdict(findings, self.config)
        if digest:
            self._cache[cache_key] = verdict
        if findings and (server, name, digest) not in self._warned:
            self._warned.add((server, name, digest))
            log.warning("[%s] %s %r: %s (%s)", server, key[:-1], name, "; ".join(verdict.reasons()),
                        verdict.action if self._enforcing() else f"audit, enforce would {verdict.action}")
        return verdict

    def _visible(self, ctx: RequestContext, key: str, server: str, name: str, item: Any) -> bool:
        if not isinstance(item, dict) or not self._enforcing():
            return True
        noted = ctx.notes.get("poisoning")
        if isinstance(noted, dict) and isinstance(noted.get("hide"), list):
            # decided on the items as the server sent them, before escapes were stripped
            hidden = f"{server}/{name}" in noted["hide"]
        elif ctx.method in _KEYS:
            hidden = False  # on_response judged this list and found nothing to hide
        else:
            hidden = self.verdict(server, key, name, item).action in ("block", "hide")
        if hidden:
            self.counts["hidden"] += 1
        return not hidden

    def _judge_listing(self, ctx: RequestContext, key: str, items: list[Any]) -> None:
        """Verdicts on the listed items as the upstream sent them, for `_visible` to apply."""
        hide: list[str] = []
        flagged: list[dict[str, Any]] = []
        peer_set = self.peer_set() if key == "tools" else None
        for item in items:
            if not isinstance(item, dict):
                continue
            located = _locate(ctx, key, item)
            if located is None:
                continue
            server, name = located
            verdict = self.verdict(server, key, name, item, peer_set)
            if verdict.findings:
                flagged.append({"server": server, "name": name, "action": verdict.action,
                                "kinds": sorted({f.kind for f in verdict.findings})})
            if verdict.action in ("block", "hide"):
                hide.append(f"{server}/{name}")
                # the list filter sees the list after escapes and invisible characters are stripped
                # (names included): a name that carried them must still match
                if (cleaned := _clean_text(name)) != name:
                    hide.append(f"{server}/{cleaned}")
        if flagged:
            ctx.notes["poisoning"] = {"hide": hide if self._enforcing() else [], "flagged": flagged}

    def _definition(self, ctx: RequestContext) -> tuple[str, Mapping[str, Any]] | None:
        key = _CALLS.get(ctx.method)
        upstream = self.gateway.servers.get(ctx.server) if self.gateway and ctx.server else None
        if key is None or upstream is None:
            return None
        if key == "tools":
            item = upstream.catalog.tools.get(ctx.target)
        elif key == "prompts":
            item = upstream.catalog.prompts.get(ctx.target)
        else:
            item = next((r for r in upstream.catalog.resources if r.get("uri") == ctx.target), None)
        return (key, item) if isinstance(item, dict) else None

    def _catalog_digest(self, item: Mapping[str, Any]) -> str:
        """`_digest` of a catalog entry, computed once per entry: a catalog replaces an entry with
        the new object a list answer brings and never changes one in place (`Catalog`), so the
        same object has the same definition (this saved one SHA-256 of the called tool's whole
        definition on every call)."""
        memo = self._digests.get(id(item))
        if memo is not None and memo[0] is item:
            return memo[1]
        digest = _digest(item)
        if len(self._digests) > 8192:
            self._digests.clear()
        self._digests[id(item)] = (item, digest)
        return digest

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        found = self._definition(ctx)
        if found is None:
            return None
        key, item = found
        assert ctx.server is not None
        verdict = self.verdict(ctx.server, key, ctx.target, item, digest=self._catalog_digest(item))
        if not verdict.findings:
            return None
        ctx.notes["poisoning"] = {"definition": [f.as_dict() for f in verdict.findings], "action": verdict.action}
        if not self._enforcing() or verdict.action in ("allow", "warn"):
            self.counts["warned"] += 1
            return None
        data = {"reasons": verdict.reasons(), "rule_ids": [f"poisoning:{f.kind}" for f in verdict.findings],
                "findings": [f.as_dict() for f in verdict.findings]}
        if verdict.action == "ask":
            approvals = self.approvals
            if approvals is not None:
                held: Reject | None = await approvals.hold(ctx, _ask_decision(ctx, verdict))
                return held
            return Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: this tool's definition needs approval and no "
                          "approval channel is running", {**data, "approval": "unavailable"}, outcome="ask-denied")
        self.counts["blocked"] += 1
        kinds = ", ".join(sorted({f.kind for f in verdict.findings}))
        return Reject(ErrorCode.BLOCKED, f"Blocked by mcpwall: the definition of {ctx.server}/{ctx.target} is "
                      f"poisoned ({kinds})", data)

    # ------------------------------------------------------------------ responses

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        body = response.get("result")
        if not isinstance(body, dict):
            return response
        if ctx.method in _SCREENED:
            return self._screen(ctx, response, body)
        if ctx.method in _KEYS:
            key = _KEYS[ctx.method]
            if isinstance(body.get(key), list):
                self._judge_listing(ctx, key, body[key])
            return self._clean_listing(response, body, key) if self.config.strip else response
        if ctx.method not in _CALLS:
            return response
        enforcing = self._enforcing()
        redact = enforcing and self.config.results == "redact"
        scan = scan_result(body, tool=ctx.target, server=ctx.server or "", redact=redact)
        if scan.stripped:
            self.counts["results_stripped"] += 1
        injected = [f for f in scan.findings if f.kind == "result_injection"]
        if not scan.findings:
            return response
        notes = ctx.notes.setdefault("poisoning", {})
        notes["result"] = [f.as_dict() for f in scan.findings]
        if injected and self.config.results != "allow":
            self.counts["results_flagged"] += 1
            log.warning("[%s] result of %r carries instructions aimed at the agent: %s", ctx.server, ctx.target,
                        injected[0].evidence)
            if enforcing and self.config.results == "block":
                ctx.outcome = "deny"
                ctx.error_message = "tool result carries instructions aimed at the agent"
                return error(ctx.id, ErrorCode.BLOCKED, "Blocked by mcpwall: the tool result carries instructions "
                             "aimed at the agent", {"reasons": [f.evidence for f in injected],
                                                    "rule_ids": ["poisoning:result_injection"]})
            if scan.redacted:
                self.counts["results_redacted"] += 1
                notes["redacted_lines"] = scan.redacted
        if not self.config.strip and not scan.redacted:
            return response
        return {**response, "result": scan.result}

    def _screen(self, ctx: RequestContext, response: Message, body: dict[str, Any]) -> Message:
        """A server's `initialize` instructions (clients put them in the model's context) and its
        resource templates' descriptions: scanned like a tool's description; in enforce mode a
        poisoned one is dropped (instructions) or left out (a template), the rest sanitised."""
        server = ctx.session.server or ""
        if ctx.method == "initialize":
            text = body.get("instructions")
            if not isinstance(text, str) or not text.strip() or not server:
                return response
            verdict = self.verdict(server, "instructions", "(instructions)", {"description": text})
            if verdict.action in ("block", "hide", "ask") and self._enforcing():
                self.counts["hidden"] += 1
                ctx.notes["poisoning"] = {"instructions": [f.as_dict() for f in verdict.findings]}
                return {**response, "result": {k: v for k, v in body.items() if k != "instructions"}}
            return {**response, "result": {**body, "instructions": sanitize(text)}} if _has_hidden(text) else response
        items = body.get("resourceTemplates")
        if not isinstance(items, list):
            return response
        kept = []
        for item in items:
            if isinstance(item, dict) and self._enforcing() and self.verdict(
                    server, "templates", str(item.get("name") or item.get("uriTemplate") or ""),
                    item).action in ("block", "hide"):
                self.counts["hidden"] += 1
                continue
            kept.append(item)
        if _has_hidden(kept):
            kept = sanitize(kept)
        return response if kept == items else {**response, "result": {**body, "resourceTemplates": kept}}

    def _clean_listing(self, response: Message, body: dict[str, Any], key: str) -> Message:
        items = body.get(key)
        if not isinstance(items, list):
            return response
        cleaned = sanitize(items) if _has_hidden(items) else items
        return response if cleaned is items else {**response, "result": {**body, key: cleaned}}

    def status(self) -> dict[str, Any]:
        return dict(self.counts)


def _digest(item: Mapping[str, Any]) -> str:
    """A definition's SHA-256, key order aside; "" when it is nested past orjson's limit (the scan
    reports it unscannable, and it is not cached)."""
    try:
        return hashlib.sha256(orjson.dumps(item, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()
    except orjson.JSONEncodeError:
        return ""


def _locate(ctx: RequestContext, key: str, item: Mapping[str, Any]) -> tuple[str, str] | None:
    """(server, name as the server knows it) of one listed item, as the list filter resolves it."""
    shown = item.get("uri") if key == "resources" else item.get("name")
    if not isinstance(shown, str):
        return None
    if key == "resources":
        owner = ctx.session.server or resource_owner(shown, ctx.gateway.servers)
        return (owner, shown) if owner else None
    if ctx.session.server is not None:
        return ctx.session.server, shown
    return split(shown)


def _has_hidden(value: Any) -> bool:
    try:
        raw = orjson.dumps(value, default=str)
    except orjson.JSONEncodeError:
        return True  # too deep to serialise: let sanitize look
    # orjson escapes control characters and writes everything else as UTF-8
    return b"\\u00" in raw or not raw.isascii()


def _ask_decision(ctx: RequestContext, verdict: Verdict) -> Any:
    from mcpwall.policy import Decision

    policy = ctx.gateway.policy.current
    return Decision(action="ask", reasons=tuple(verdict.reasons()),
                    rule_ids=tuple(f"poisoning:{f.kind}" for f in verdict.findings), mode=policy.mode,
                    enforced_action="ask", revision=policy.revision, timeout_ms=policy.default_timeout_ms)


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> PoisoningStage | None:
    """`stages: {poisoning: {...}}`; on unless `enabled: false`."""
    section = (config.get("stages") or {}).get("poisoning")
    if section is False or (isinstance(section, dict) and section.get("enabled") is False):
        return None
    if section is not None and not isinstance(section, dict | bool):
        raise ConfigError("stages.poisoning: expected a mapping")
    stage = PoisoningStage(PoisoningConfig(section if isinstance(section, dict) else {}),
                           components.approvals if components is not None else None)
    if components is not None:
        components.tool_filters.append(stage._visible)  # a poisoned definition is not listed
    return stage


__all__ = ["DEFAULT_ACTIONS", "DEFINITION_ACTIONS", "RESULT_ACTIONS", "PoisoningConfig", "PoisoningStage", "Verdict",
           "build"]
