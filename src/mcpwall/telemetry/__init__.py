"""OpenTelemetry traces of the gateway's calls, exported over OTLP/HTTP (docs/TRACING.md).

Off unless configured (`_config.py`: policy.yaml's `telemetry:` block or the
standard OTEL_* variables). When off, nothing here has imported
OpenTelemetry and the gateway runs the plain pipeline: no span, no check per
stage. When on, `tracing_from` builds a `Tracing` (`_tracing.py`, the one
module that imports the SDK), which the gateway runs its pipeline through
(`proxy/_traced.py`): a span per call after the MCP and GenAI semantic
conventions (`_attributes.py`), a child per stage hook, a CLIENT span for the
forward whose context the upstream receives in `params._meta.traceparent`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpwall.errors import ConfigError
from mcpwall.telemetry._config import TRACES_PATH, TelemetryBlock, TelemetryConfig, telemetry_config

if TYPE_CHECKING:
    from mcpwall.telemetry._tracing import Tracing

log = logging.getLogger("mcpwall.telemetry")


def tracing_from(section: Any, environ: Mapping[str, str] | None = None) -> Tracing | None:
    """The gateway's tracer when the policy's `telemetry:` block or the environment asks for one.

    Without the SDK installed (`pip install 'mcpwall[otel]'`), a policy that asks for traces is a
    ConfigError; variables meant for other programs only earn a warning."""
    config = telemetry_config(section, environ)
    if config is None:
        return None
    try:
        from mcpwall.telemetry._tracing import Tracing
    except ImportError as exc:
        text = f"traces need the OpenTelemetry SDK ({exc.name} is missing): pip install 'mcpwall[otel]'"
        if config.source == "policy":
            raise ConfigError(f"policy telemetry: {text}") from exc
        log.warning("OTEL_* variables ask for traces, but %s", text)
        return None
    return Tracing(config)


def trace_headers(headers: Mapping[str, str]) -> dict[str, str] | None:
    """The W3C trace context of an HTTP request (lower-cased header names), None without one:
    what a frontend hands the gateway beside the message, never its other headers."""
    parent = headers.get("traceparent")
    if parent is None:
        return None
    state = headers.get("tracestate")
    return {"traceparent": parent} if state is None else {"traceparent": parent, "tracestate": state}


__all__ = [
    "TRACES_PATH",
    "TelemetryBlock",
    "TelemetryConfig",
    "telemetry_config",
    "trace_headers",
    "tracing_from",
]
