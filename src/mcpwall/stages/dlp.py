"""The DLP stage: mask secrets in results, and stop them from being sent back out.

Response side (`on_response`): every string of the result (and of an upstream
error's message and data), including JSON nested inside text, is scanned;
secrets become `[REDACTED-<type>]`. `ctx.notes["dlp"]` records what was masked
(types and JSON paths, never the secret) for the ledger.

Request side (`on_request`): a tools/call (or prompts/get, resources/read)
whose arguments carry a secret this session was shown, even encoded, is
denied (-32001): the agent is exfiltrating it. Any other credential in the
arguments of a tools/call or prompts/get (a key, a token, a private key, a
password in a URL, under whatever argument name) is masked before the server
sees it (`arguments: redact`, the default, like the policy's redact rules
for argument names), or the call is denied (`arguments: block`). The
catch-all `high-entropy` type and card numbers are left out there: hashes and
ids are normal arguments, and a payment tool is given card numbers on purpose.

policy.yaml::

    dlp: true | false | {enabled: true, action: redact|block, exfiltration: true,
                         arguments: redact|block|off, disable: [high-entropy],
                         decode: true, maxDecodedBytes: 8388608}

Encoded content is read too (security/_decode.py): a base64 payload (an image's
or audio's `data`, a resource's `blob`, a whole string or a run inside text),
gzip/zlib/bzip2/xz streams and zip archives inside it, nested, within
`maxDecodedBytes` decoded bytes per message. A payload whose decoded form holds
a secret is replaced whole (a blob cannot be partly masked): under `blob`/`data`
by the base64 of a notice naming the types, with `mimeType` set to `text/plain`;
in text by `[REDACTED-<type>]`. Content past the bound is withheld as `unscanned`.

`action: block` withholds a result containing secrets instead of masking it.
Redaction applies in audit mode too (like the policy's redact rules); the
exfiltration block and `action: block` are recorded, not enforced, in audit mode.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import GatewayView, Reject, RequestContext, Session, Stage
from mcpwall.protocol import ErrorCode, Message, error
from mcpwall.security.dlp import Finding, Fingerprints, Scanner
from mcpwall.stages._components import Components
from mcpwall.stages._configs import DLPConfig
from mcpwall.stages._kit import enforce, flat, parse

log = logging.getLogger("mcpwall.dlp")

#: Methods whose results are scanned and whose arguments are checked for exfiltration.
SCANNED = frozenset({"tools/call", "resources/read", "prompts/get", "completion/complete"})
#: Methods whose `arguments` are checked for credentials.
ARGUMENTS = frozenset({"tools/call", "prompts/get"})
MAX_NOTED = 50


class DLPStage(Stage):
    name = "dlp"

    def __init__(self, config: DLPConfig | None = None) -> None:
        self.config = config or DLPConfig()
        decode, limit = self.config.decode, self.config.max_decoded_bytes
        self.scanner = Scanner(disabled=self.config.disable, decode=decode, max_decoded=limit)
        # Hashes and ids are normal arguments; a payment tool is given card numbers on purpose.
        self.argument_scanner = Scanner(disabled=[*self.config.disable, "high-entropy", "credit-card"],
                                        decode=decode, max_decoded=limit)
        self.argument_secrets = 0
        self.fingerprints = Fingerprints()
        self.responses_redacted = 0
        self.redactions = 0
        self.by_type: Counter[str] = Counter()
        self.exfiltration_blocked = 0
        self.withheld = 0
        self._gateway: GatewayView | None = None

    def bind(self, gateway: GatewayView) -> None:
        self._gateway = gateway

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        if ctx.method not in SCANNED:
            return None
        if self.config.exfiltration:
            verdict = self._exfiltration(ctx)
            if verdict is not None:
                return verdict
        if self.config.arguments != "off" and ctx.method in ARGUMENTS:
            return self._arguments(ctx)
        return None

    # ------------------------------------------------------------------ server <-> client, outside calls

    def on_server_message(self, session_id: str, msg: Message) -> Message:
        return self.mask_outbound(session_id, msg)

    def on_client_answer(self, session: Session, answer: Message) -> str | None:
        why = self.exfiltrating(session.id, answer.get("result", answer.get("error")))
        gateway = self._gateway
        if why is not None and gateway is not None and gateway.policy.current.mode != "enforce":
            log.warning("AUDIT MODE: a client's answer to a server let through although %s", why)
            return None  # recorded (the log line), as audit mode does for a call
        return why

    def mask_outbound(self, session_id: str, msg: Message) -> Message:
        """A message a server sends a client on its own (a log line, progress, a sampling or
        elicitation request): its secrets masked like a result's, and remembered for the session
        so that they cannot be sent back out either."""
        params = msg.get("params")
        if not isinstance(params, dict):
            return msg
        body, findings = self.scanner.redact(params, "params")
        if not findings:
            return msg
        self.redactions += len(findings)
        self.by_type.update(f.type for f in findings)
        if self.config.exfiltration:
            self.fingerprints.add(session_id, findings)
        log.info("%s from a server: redacted %d secret(s)", msg.get("method"), len(findings))
        return {**msg, "params": body}

    def exfiltrating(self, session_id: str, value: Any) -> str | None:
        """Why a client's answer to a server's request (a sampling result, an elicitation) must not
        reach the server: it carries a secret the session was shown; None when it may."""
        hits = self._sent_back(session_id, value) if self.config.exfiltration else []
        if not hits:
            return None
        kinds = ", ".join(sorted({h["type"] for h in hits}))
        return f"[mcpwall.dlp.exfiltration] the answer carries a secret this session received ({kinds})"

    def _sent_back(self, session_id: str, value: Any) -> list[dict[str, str]]:
        """Where `value` carries a secret this session was shown (counted as an exfiltration)."""
        if not self.fingerprints.has(session_id):
            return []
        hits = self.fingerprints.match(session_id, value, self.scanner)
        if hits:
            self.exfiltration_blocked += 1
        return hits

    def _arguments(self, ctx: RequestContext) -> Reject | None:
        args = ctx.params.get("arguments")
        if not isinstance(args, dict) or not args or self.argument_scanner.finds_nothing(flat(ctx, args)):
            return None
        body, findings = self.argument_scanner.redact(args, "arguments")
        if not findings:
            return None
        self.argument_secrets += len(findings)
        kinds = ", ".join(sorted({f.type for f in findings}))
        where = ", ".join(f.path for f in findings[:5])
        note = ctx.notes.setdefault("dlp", {})
        note.setdefault("erased", []).extend(f"request.{f.path}" for f in findings[:MAX_NOTED])
        if self.config.arguments == "block":
            reason = f"[mcpwall.dlp.arguments] the arguments carry a credential ({kinds} at {where})"
            log.warning("%s/%s: %s", ctx.server, ctx.target, reason)
            return enforce(ctx, "dlp", Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + reason, {
                "reasons": [reason], "rule_ids": ["mcpwall.dlp.arguments"],
                "findings": [f.public() for f in findings[:MAX_NOTED]]}))
        ctx.params = {**ctx.params, "arguments": body}
        log.warning("%s/%s: masked %d credential(s) in the arguments (%s at %s)", ctx.server, ctx.target,
                    len(findings), kinds, where)
        return None

    def _exfiltration(self, ctx: RequestContext) -> Reject | None:
        hits = self._sent_back(ctx.session.id, ctx.params)
        if not hits:
            return None
        kinds = sorted({h["type"] for h in hits})
        where = ", ".join(h["path"] for h in hits[:5])
        reason = (f"[mcpwall.dlp.exfiltration] the arguments carry a secret this session received "
                  f"({', '.join(kinds)} at {where})")
        ctx.notes.setdefault("dlp", {})["exfiltration"] = hits[:MAX_NOTED]
        log.warning("%s/%s: %s (session %s)", ctx.server, ctx.target, reason, ctx.session.id[:8])
        return enforce(ctx, "dlp", Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + reason, {
            "reasons": [reason], "rule_ids": ["mcpwall.dlp.exfiltration"], "findings": hits[:MAX_NOTED]}))

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        if ctx.method not in SCANNED:
            return response
        if "result" in response:
            result = response["result"]
            if self.scanner.finds_nothing(flat(ctx, result)):
                return response  # the strings the chain stage and the poisoning scan read, or their cleaned copy
            body, findings = self.scanner.redact(result, "result")
            if findings:
                response = {**response, "result": body}
        elif isinstance(response.get("error"), dict):
            body, findings = self.scanner.redact(response["error"], "error")
            if findings:
                response = {**response, "error": body}
        else:
            return response
        if not findings:
            return response
        self._record(ctx, findings)
        if self.config.action == "block":
            reason = (f"[mcpwall.dlp] the result contains {len(findings)} secret(s) "
                      f"({', '.join(sorted({f.type for f in findings}))})")
            verdict = enforce(ctx, "dlp", Reject(ErrorCode.BLOCKED, reason))
            if verdict is not None:
                self.withheld += 1
                ctx.outcome = "deny"
                return error(ctx.id, ErrorCode.BLOCKED, "Blocked by mcpwall: the response was withheld; " + reason,
                             {"reasons": [reason], "rule_ids": ["mcpwall.dlp"], "phase": "response",
                              "masked": [f.public() for f in findings[:MAX_NOTED]]})
        return response

    def _record(self, ctx: RequestContext, findings: list[Finding]) -> None:
        self.responses_redacted += 1
        self.redactions += len(findings)
        types = Counter(f.type for f in findings)
        self.by_type.update(types)
        note = ctx.notes.setdefault("dlp", {})
        note["redactions"] = note.get("redactions", 0) + len(findings)
        note.setdefault("masked", []).extend(f.public() for f in findings[:MAX_NOTED])
        note["types"] = dict(types)
        if self.config.exfiltration:
            self.fingerprints.add(ctx.session.id, findings)
        self._prune(ctx)
        log.info("%s/%s: redacted %d secret(s): %s", ctx.server, ctx.target, len(findings),
                 ", ".join(f"{k} x{v}" for k, v in types.items()))

    def _prune(self, ctx: RequestContext) -> None:
        # Sessions end without telling stages; drop fingerprints of closed ones now and then.
        if len(self.fingerprints.sessions()) > 1000:
            live = ctx.gateway.sessions
            for sid in self.fingerprints.sessions():
                if sid not in live:
                    self.fingerprints.forget(sid)

    def status(self) -> dict[str, Any]:
        return {"responses_redacted": self.responses_redacted, "redactions": self.redactions,
                "by_type": dict(self.by_type), "exfiltration_blocked": self.exfiltration_blocked,
                "withheld": self.withheld, "fingerprints": len(self.fingerprints), "action": self.config.action,
                "argument_secrets": self.argument_secrets}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> DLPStage | None:
    """On by default; `dlp: false` or `dlp: {enabled: false}` switches it off."""
    cfg = parse(DLPConfig, config.get("dlp"), "dlp")
    return DLPStage(cfg) if cfg.enabled else None


__all__ = ["SCANNED", "DLPConfig", "DLPStage", "build"]
