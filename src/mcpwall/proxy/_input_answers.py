"""A client's answers to a server's input requests, decided before the server gets them.

The policing of an `inputResponses` dict (MCP 2026-07-28 multi round-trip
requests) in one function, for every direction that carries one: a modern
client's retry to a held legacy call (`_mrtr`), and any bridge that builds one
for a modern server. It decides them as the legacy era's answers to a
server's requests are decided (`_server_traffic.client_response`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import Session
from mcpwall.protocol import ErrorCode, Message, error

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway

log = logging.getLogger("mcpwall.mrtr")


@dataclass(frozen=True)
class Policed:
    """What the gateway makes of a client's `inputResponses`: per asked key, the JSON-RPC answer for
    the server (`result`: the client's answer; `error`: the gateway's refusal), the refusals with
    their reasons, and the keys nobody asked (never forwarded)."""

    replies: dict[str, Message]
    withheld: list[dict[str, str]]
    ignored: list[str]


def police_input_responses(gateway: Gateway, session: Session, asked: Mapping[str, str],
                           responses: Mapping[str, Any]) -> Policed:
    """Decide a client's answers to a server's input requests as the legacy answers are decided.

    `asked` maps each key the server's requests were given to their method; `responses` is the
    client's `inputResponses`. A sampling answer is refused while `allowSampling` is false; every
    answer passes the pipeline's client-answer hooks (the honeytoken tripwire, DLP's check for a
    secret this session was shown) and is refused with BLOCKED (-32001) when one objects. Keys
    not in `asked` are returned in `ignored`. Used for modern clients' retries here and for any
    other direction that must decide an `inputResponses` dict.
    """
    replies: dict[str, Message] = {}
    withheld: list[dict[str, str]] = []
    ignored: list[str] = []
    for key, value in responses.items():
        method = asked.get(key)
        if method is None:
            ignored.append(str(key)[:100])
            continue
        why: str | None
        if not isinstance(value, dict):
            why = "the answer is not an object"
        elif method == "sampling/createMessage" and not gateway.policy.current.allow_sampling:
            why = "sampling is disabled by policy (allowSampling: false)"
        else:
            why = gateway.pipeline.client_answer(session, {"jsonrpc": "2.0", "id": key, "result": value})
        if why is None:
            replies[key] = {"jsonrpc": "2.0", "id": key, "result": value}
            continue
        log.warning("session %s: %s answer withheld from the server: %s", session.id[:8], method, why)
        withheld.append({"key": str(key), "method": method, "reason": why})
        replies[key] = error(key, ErrorCode.BLOCKED, "Blocked by mcpwall: " + why, {"reasons": [why]})
    return Policed(replies, withheld, ignored)


__all__ = ["Policed", "police_input_responses"]
