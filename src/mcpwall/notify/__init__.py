"""Webhook notifications (policy `notifications.webhooks`) in mcp-seatbelt's formats.

    notifier = Notifier(SenderOptions(attempts=4, backoff_s=0.5))
    notifier.publish(policy.source.notifications.webhooks, events_for(ctx))   # never blocks
    await notifier.close()

`events_for` turns a finished request into events (deny, warn, redact,
honeytoken, rug_pull, attack_chain, toxic_flow, allow); `ask_event` is sent
when an ask starts waiting. Payloads are redacted before they leave
(`_formats.render`). The notify stage (`mcpwall.stages.notify`) wires it up.
"""

from __future__ import annotations

from mcpwall.notify._events import DECIDED, EVENT_ORDER, NotificationEvent, ask_event, events_for, iso, pick
from mcpwall.notify._formats import COLOR, EMOJI, FORMATS, SOURCE, as_discord, as_json, as_slack, render
from mcpwall.notify._sender import RETRY_STATUS, Notifier, SenderOptions, destination_name

__all__ = [
    "COLOR",
    "DECIDED",
    "EMOJI",
    "EVENT_ORDER",
    "FORMATS",
    "RETRY_STATUS",
    "SOURCE",
    "NotificationEvent",
    "Notifier",
    "SenderOptions",
    "as_discord",
    "as_json",
    "as_slack",
    "ask_event",
    "destination_name",
    "events_for",
    "iso",
    "pick",
    "render",
]
