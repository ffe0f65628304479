"""Threat intel: deny calls whose arguments name a known-bad IP, domain or URL.

Offline first: a ThreatFox CSV export (`<home>/threatfox.csv` when present, or
the files named in `feed`) answers without network. The ThreatFox API is
consulted only when configured (`api: true` or a mapping; the key comes from
the environment variable `authKeyEnv`, THREATFOX_AUTH_KEY by default), for
indicators the feed did not know, at most `maxLookups` per call, each within
the timeout. No feed and no API: the stage is off.

policy.yaml::

    stages:
      threatintel:
        feed: [threatfox.csv]          # relative to the mcpwall home
        minConfidence: 50
        action: deny                   # deny | warn
        api: {url: https://threatfox-api.abuse.ch/api/v1/, authKeyEnv: THREATFOX_AUTH_KEY,
              timeoutMs: 3000, cacheSeconds: 3600, maxLookups: 4}

`ctx.notes["threatintel"]` lists the indicators found and the verdicts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode
from mcpwall.security.threatintel import (
    Indicator,
    OfflineFeed,
    ThreatFoxClient,
    Verdict,
    auth_key_from_env,
    extract,
)
from mcpwall.stages._components import Components
from mcpwall.stages._configs import ApiConfig, ThreatIntelConfig
from mcpwall.stages._kit import enforce, flat, parse, stage_block

log = logging.getLogger("mcpwall.threatintel")

CHECKED = frozenset({"tools/call", "resources/read", "prompts/get"})


class ThreatIntelStage(Stage):
    name = "threatintel"

    def __init__(self, feed: OfflineFeed | None, api: ThreatFoxClient | None, action: str = "deny",
                 max_lookups: int = 4) -> None:
        self.feed = feed
        self.api = api
        self.action = action
        self.max_lookups = max_lookups
        self.checked = 0
        self.blocked = 0
        self.warned = 0

    async def start(self) -> None:
        if self.feed is not None:
            try:
                self.feed.load()
            except (OSError, ValueError) as exc:
                log.warning("threat intel feed unreadable (%s); offline lookups are off until it is fixed", exc)

    async def stop(self) -> None:
        if self.api is not None:
            await self.api.aclose()

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        if ctx.method not in CHECKED:
            return None
        value = ctx.params.get("arguments") if ctx.method != "resources/read" else ctx.params
        indicators = extract(value, flat(ctx, value))
        if not indicators:
            return None
        self.checked += 1
        verdicts = await self.check(indicators)
        if not verdicts:
            return None
        found = [v.as_dict() for v in verdicts]
        ctx.notes["threatintel"] = {"indicators": found}
        reason = "[mcpwall.threat-intel] known indicator(s) of compromise: " + ", ".join(
            f"{v.indicator} ({v.threat_type or 'malicious'}{', ' + v.malware if v.malware else ''}; {v.source})"
            for v in verdicts[:5])
        if self.action == "warn":
            self.warned += 1
            log.warning("%s/%s: %s", ctx.server, ctx.target, reason)
            return None
        self.blocked += 1
        log.warning("%s/%s: %s", ctx.server, ctx.target, reason)
        return enforce(ctx, "threatintel", Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + reason, {
            "reasons": [reason], "rule_ids": ["mcpwall.threat-intel"], "indicators": found}))

    async def check(self, indicators: list[Indicator]) -> list[Verdict]:
        verdicts: list[Verdict] = []
        remote: list[Indicator] = []
        if self.feed is not None:
            self.feed.refresh()
        for ind in indicators:
            verdict = self.feed.lookup(ind) if self.feed is not None else None
            if verdict is not None:
                verdicts.append(verdict)
            elif ind.remote:
                remote.append(ind)
        if self.api is not None and remote and not verdicts:
            answers = await asyncio.gather(*(self.api.lookup(i) for i in remote[:self.max_lookups]))
            verdicts.extend(a for a in answers if a is not None)
        return verdicts

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"checked": self.checked, "blocked": self.blocked, "warned": self.warned,
                               "feed_indicators": len(self.feed) if self.feed is not None else 0}
        if self.api is not None:
            out["api"] = {"queries": self.api.queries, "failures": self.api.failures,
                          "cache_hits": self.api.cache_hits}
        return out


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> ThreatIntelStage | None:
    cfg = parse(ThreatIntelConfig, stage_block(config, "threatintel"), "stages.threatintel")
    if not cfg.enabled:
        return None
    home = Path(getattr(settings, "home", None) or ".")
    names = [cfg.feed] if isinstance(cfg.feed, str) else list(cfg.feed or [])
    paths = [p if p.is_absolute() else home / p for p in map(Path, names)]
    if not names and (home / "threatfox.csv").exists():
        paths = [home / "threatfox.csv"]
    feed = OfflineFeed(paths, cfg.minConfidence) if paths else None
    api_cfg = ApiConfig() if cfg.api is True else (cfg.api if isinstance(cfg.api, ApiConfig) else None)
    api = None
    if api_cfg is not None and api_cfg.enabled:
        api = ThreatFoxClient(api_cfg.url, auth_key_from_env(api_cfg.authKeyEnv), api_cfg.timeoutMs / 1000,
                              api_cfg.cacheSeconds, cfg.minConfidence)
    if feed is None and api is None:
        return None
    return ThreatIntelStage(feed, api, cfg.action, api_cfg.maxLookups if api_cfg is not None else 4)


__all__ = ["ThreatIntelConfig", "ThreatIntelStage", "build"]
