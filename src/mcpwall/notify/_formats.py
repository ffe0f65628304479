"""Webhook payloads in mcp-seatbelt's three formats (src/proxy/notifications.ts).

- `json`: seatbelt's `{event, server, tool, reasons, timestamp}`, then ours:
  `rule_ids`, `decision`, `method`, `session`, `client`, `agent`,
  `arguments` (redacted), `approval_id`, `detail`, `url`, `source`.
- `slack`: `text` + one mrkdwn `section` block + an `attachments` entry with
  a colour and Action/Server/Tool/Timestamp fields, as seatbelt sends.
- `discord`: one embed with title, colour, Server/Tool/Reasons fields and
  the timestamp, as seatbelt sends.

Seatbelt knows deny, warn and redact; the other events get their own emoji
and colour in the same shapes. The payload is built from a redacted event:
the policy's redactions and DLP masking are applied to the arguments, and
DLP masking to every string of the payload (`render`).
"""

from __future__ import annotations

from typing import Any

import orjson

from mcpwall.approvals import mask_secrets, safe_arguments
from mcpwall.notify._events import NotificationEvent

SOURCE = "mcpwall"
EMOJI = {"deny": ":no_entry:", "warn": ":warning:", "redact": ":lock:", "ask": ":raised_hand:",
         "honeytoken": ":rotating_light:", "rug_pull": ":construction:", "attack_chain": ":link:",
         "toxic_flow": ":biohazard_sign:", "allow": ":white_check_mark:"}
COLOR = {"deny": 0xFF0000, "warn": 0xFFA500, "redact": 0xFFFF00, "ask": 0x3B82F6, "honeytoken": 0xB000B0,
         "rug_pull": 0xFF5500, "attack_chain": 0xCC0000, "toxic_flow": 0x990099, "allow": 0x22AA22}
#: Discord rejects field values over 1024 characters and Slack truncates long text.
MAX_FIELD = 1000


def _cut(text: str, limit: int = MAX_FIELD) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_json(event: NotificationEvent) -> dict[str, Any]:
    out: dict[str, Any] = {
        "event": event.event, "server": event.server, "tool": event.tool, "reasons": list(event.reasons),
        "timestamp": event.timestamp,
        "rule_ids": list(event.rule_ids), "decision": event.decision, "method": event.method,
        "session": event.session, "client": event.client, "agent": event.agent,
        "arguments": safe_arguments(event.arguments or {}, event.redacted_keys) if event.arguments is not None
        else None,
        "approval_id": event.approval_id, "detail": dict(event.detail), "url": event.url, "source": SOURCE,
    }
    if event.ledger_head is not None:
        out["ledger_head"] = event.ledger_head
    return out


def as_slack(event: NotificationEvent) -> dict[str, Any]:
    emoji = EMOJI.get(event.event, ":bell:")
    action = event.event.upper()
    reasons = _cut("; ".join(event.reasons) or "-")
    lines = [f"{emoji} *mcpwall {action}*", f"*Server:* {event.server}", f"*Tool:* {event.tool}",
             f"*Reason:* {reasons}"]
    if event.rule_ids:
        lines.append(f"*Rules:* {', '.join(event.rule_ids)}")
    if event.approval_id:
        lines.append(f"*Approval:* `{event.approval_id}`" + (f" <{event.url}|open the dashboard>" if event.url else ""))
    return {
        "text": f"{emoji} mcpwall: *{action}* — {event.server}/{event.tool}",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": _cut("\n".join(lines), 2900)}}],
        "attachments": [{
            "color": f"#{COLOR.get(event.event, 0x888888):06x}",
            "fields": [
                {"title": "Action", "value": event.event, "short": True},
                {"title": "Server", "value": event.server, "short": True},
                {"title": "Tool", "value": event.tool, "short": True},
                {"title": "Timestamp", "value": event.timestamp, "short": True},
            ],
        }],
    }


def as_discord(event: NotificationEvent) -> dict[str, Any]:
    fields = [{"name": "Server", "value": event.server or "-", "inline": True},
              {"name": "Tool", "value": event.tool or "-", "inline": True},
              {"name": "Reasons", "value": _cut("; ".join(event.reasons) or "-")}]
    if event.rule_ids:
        fields.append({"name": "Rules", "value": _cut(", ".join(event.rule_ids))})
    if event.approval_id:
        fields.append({"name": "Approval", "value": f"`{event.approval_id}`" + (f" {event.url}" if event.url else "")})
    return {"embeds": [{"title": f"mcpwall: {event.event.upper()}", "color": COLOR.get(event.event, 0x888888),
                        "fields": fields, "timestamp": event.timestamp}]}


FORMATS = {"json": as_json, "slack": as_slack, "discord": as_discord}


def render(fmt: str, event: NotificationEvent) -> bytes:
    """The request body for one webhook: the format's payload, secrets masked everywhere."""
    payload = FORMATS.get(fmt, as_json)(event)
    return orjson.dumps(mask_secrets(payload), option=orjson.OPT_NON_STR_KEYS, default=str)


__all__ = ["COLOR", "EMOJI", "FORMATS", "SOURCE", "as_discord", "as_json", "as_slack", "render"]
