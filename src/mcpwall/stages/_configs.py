"""The defence stages' policy.yaml blocks, as pydantic models (`_kit.parse` validates them).

A stage's block lives here rather than next to the stage because the stages run compiled
(`mcpwall._native`) and these models must not: mypyc builds a class it cannot compile natively
(a pydantic model) from its annotations' bare classes, so `list[str]` would reach pydantic as `list`
and a `Literal` as `object`, and a block that is refused today would pass. Interpreted, each model
validates exactly as written. Each stage module re-exports its own (`mcpwall.stages.chain.ChainConfig`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcpwall.security._decode import MAX_DECODED
from mcpwall.security.threatintel import THREATFOX_API


class StageConfig(BaseModel):
    """Base of the stage blocks: camelCase keys as in the rest of policy.yaml, nothing unknown."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ChainConfig(StageConfig):
    enabled: bool = True
    killChain: bool = True
    toxicFlow: bool = True
    action: Literal["deny", "ask", "warn"] = "deny"
    workspace: list[str] = Field(default_factory=list)
    untrustedServers: list[str] = Field(default_factory=list)
    trustedServers: list[str] = Field(default_factory=list)
    privateServers: list[str] = Field(default_factory=list)
    privateToSink: Literal["deny", "ask", "warn", "off"] = "ask"
    decaySeconds: float = 300.0
    sourceTtlSeconds: float = 3600.0


class DLPConfig(StageConfig):
    enabled: bool = True
    action: Literal["redact", "block"] = "redact"
    exfiltration: bool = True
    #: credentials in a call's arguments: masked, the call denied, or let through
    arguments: Literal["redact", "block", "off"] = "redact"

    @field_validator("arguments", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML reads a bare `off` as false
    #: secret types to leave alone (e.g. `high-entropy`)
    disable: list[str] = Field(default_factory=list)
    #: decode base64 payloads, compressed streams and archives, and scan what they hold
    decode: bool = True
    #: decoded bytes one message may cost; content past it is withheld (`unscanned`)
    max_decoded_bytes: int = Field(default=MAX_DECODED, alias="maxDecodedBytes", ge=1 << 16, le=1 << 30)


#: the decoys `honeytokens.types` may name
Kind = Literal["aws", "github", "database"]
_ALL_KINDS: tuple[Kind, ...] = ("aws", "github", "database")


class HoneytokenConfig(StageConfig):
    enabled: bool = False
    types: list[Kind] = Field(default_factory=lambda: list(_ALL_KINDS))
    #: globs of tool names / servers whose results get decoys (empty: all)
    tools: list[str] = Field(default_factory=list)
    servers: list[str] = Field(default_factory=list)
    blockInAudit: bool = True


class RemoteConfig(StageConfig):
    provider: Literal["anthropic", "openai"]
    model: str = ""
    apiKeyEnv: str = ""
    url: str = ""
    timeoutMs: int = 5000
    cacheSize: int = 100
    cacheSeconds: float = 300.0
    when: Literal["always", "suspicious"] = "always"


class JudgeConfig(StageConfig):
    enabled: bool = True
    heuristics: bool = True
    denyScore: int = 3
    warnScore: int = 1
    remote: RemoteConfig | None = None


class MetricsConfig(StageConfig):
    enabled: bool = True


class SchemaConfig(StageConfig):
    enabled: bool = True
    #: `validate:` in policy.yaml (the name shadows a pydantic method, hence the alias)
    validate_arguments: bool = Field(True, alias="validate")
    pathSafety: bool = True
    allowPaths: list[str] = Field(default_factory=list)
    #: extra regexes of sensitive paths (matched on every spelling of a path argument)
    sensitivePaths: list[str] = Field(default_factory=list)


class ApiConfig(StageConfig):
    enabled: bool = True
    url: str = THREATFOX_API
    authKeyEnv: str = "THREATFOX_AUTH_KEY"
    timeoutMs: int = 3000
    cacheSeconds: float = 3600.0
    maxLookups: int = 4


class ThreatIntelConfig(StageConfig):
    enabled: bool = True
    feed: list[str] | str | None = None
    minConfidence: int = 50
    action: Literal["deny", "warn"] = "deny"
    api: ApiConfig | bool | None = None


__all__ = ["ApiConfig", "ChainConfig", "DLPConfig", "HoneytokenConfig", "JudgeConfig", "Kind", "MetricsConfig",
           "RemoteConfig", "SchemaConfig", "StageConfig", "ThreatIntelConfig"]
