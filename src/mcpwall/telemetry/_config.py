"""Whether traces are on, and where they go: policy.yaml's `telemetry:` block and the OTEL_* variables.

Off unless asked for. Either of these turns traces on:

- a `telemetry:` block in policy.yaml (`telemetry: true`, or a mapping whose
  `enabled` is not false);
- the standard variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
  `OTEL_EXPORTER_OTLP_ENDPOINT` set, or `OTEL_TRACES_EXPORTER` naming `otlp`.

And these keep them off whatever else says: `telemetry: {enabled: false}`,
`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`. Only OTLP over
HTTP/protobuf is spoken; the exporter reads the other OTEL_EXPORTER_OTLP_*
variables (headers, timeout, compression, certificates) itself.

Nothing here imports OpenTelemetry: a gateway without traces never loads it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcpwall.errors import ConfigError

log = logging.getLogger("mcpwall.telemetry")

#: The OTLP/HTTP path of traces under a base endpoint (as OTEL_EXPORTER_OTLP_ENDPOINT is one).
TRACES_PATH = "v1/traces"


class TelemetryBlock(BaseModel):
    """policy.yaml's `telemetry:` block, as written (camelCase, nothing unknown)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    enabled: bool = True
    #: the collector's base URL (`/v1/traces` is appended), as OTEL_EXPORTER_OTLP_ENDPOINT
    endpoint: str | None = None
    #: the full URL of the traces endpoint, as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    tracesEndpoint: str | None = None
    #: extra request headers (an API key); OTEL_EXPORTER_OTLP_HEADERS is read as well
    headers: dict[str, str] = Field(default_factory=dict)
    serviceName: str | None = None
    timeoutMs: int | None = Field(default=None, ge=100, le=120_000)
    #: a share of new traces to keep (0..1); a caller's sampled flag is always followed
    sampleRatio: float | None = Field(default=None, ge=0.0, le=1.0)
    #: one child span per stage hook (False: only the call's span and its upstream span)
    stageSpans: bool = True


@dataclass(frozen=True)
class TelemetryConfig:
    """What the tracer is built from. `endpoint` None: the exporter reads the OTEL_* variables."""

    endpoint: str | None = None
    headers: Mapping[str, str] | None = None
    service_name: str | None = None
    timeout_s: float | None = None
    sample_ratio: float | None = None
    stage_spans: bool = True
    #: "policy" (the telemetry: block asked for traces) or "environment" (OTEL_* variables did)
    source: str = "policy"


def _on(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def telemetry_config(section: Any, environ: Mapping[str, str] | None = None) -> TelemetryConfig | None:
    """The tracer's configuration, or None when traces are off (the default).

    `section` is the policy's `telemetry:` value (None when absent); `environ` the process
    environment (os.environ when None). A malformed block is a ConfigError naming it.
    """
    env = os.environ if environ is None else environ
    block = _block(section)
    if block is not None and not block.enabled:
        return None
    if _on(env.get("OTEL_SDK_DISABLED")):
        return None
    exporters = {e.strip().lower() for e in (env.get("OTEL_TRACES_EXPORTER") or "").split(",") if e.strip()}
    if exporters == {"none"}:
        return None
    asked_by_env = bool(
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or "otlp" in exporters
    )
    if block is None and not asked_by_env:
        return None
    if exporters - {"otlp", "none"}:
        log.warning(
            "OTEL_TRACES_EXPORTER=%s: mcpwall exports traces over OTLP only", env.get("OTEL_TRACES_EXPORTER")
        )
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol and protocol.strip() != "http/protobuf":
        log.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%s: mcpwall speaks OTLP over http/protobuf only", protocol)
    if block is None:
        return TelemetryConfig(source="environment")
    endpoint = block.tracesEndpoint
    if endpoint is None and block.endpoint is not None:
        endpoint = f"{block.endpoint.rstrip('/')}/{TRACES_PATH}"
    return TelemetryConfig(
        endpoint=endpoint,
        headers=dict(block.headers) or None,
        service_name=block.serviceName,
        timeout_s=block.timeoutMs / 1000 if block.timeoutMs is not None else None,
        sample_ratio=block.sampleRatio,
        stage_spans=block.stageSpans,
    )


def _block(section: Any) -> TelemetryBlock | None:
    if section is None:
        return None
    raw = {"enabled": section} if isinstance(section, bool) else section
    if not isinstance(raw, Mapping):
        raise ConfigError(f"policy telemetry: expected a mapping or true/false, got {type(section).__name__}")
    try:
        block = TelemetryBlock.model_validate(dict(raw))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'telemetry'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"policy telemetry: {problems}") from exc
    for url in (block.endpoint, block.tracesEndpoint):
        if url is not None and not url.startswith(("http://", "https://")):
            raise ConfigError(f"policy telemetry: endpoint {url!r} is not an http:// or https:// URL")
    return block


__all__ = ["TRACES_PATH", "TelemetryBlock", "TelemetryConfig", "telemetry_config"]
