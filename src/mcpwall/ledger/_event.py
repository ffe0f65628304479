"""What the ledger records about one request, and how it becomes a row.

The ledger stage fills an `Event` on the event loop from plain attribute
reads (microseconds); `build_row` serialises it later, on the writer thread:
previews, the OPA-style `erased`/`masked` lists, full bodies and their
ids (see `BodyNames`), and the per-rule rows. Arguments are recorded as the upstream
saw them (after redaction); when no policy decision covered a call (it was
rejected before the policy stage), only the argument *names* are kept.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

#: Methods whose `params.arguments` are the call's arguments (others: the params themselves).
_ARGUMENT_METHODS = frozenset({"tools/call", "prompts/get"})
_NOTE_SKIP = frozenset({"dlp", "requests_last_minute"})
_DUMP_OPTS = orjson.OPT_NON_STR_KEYS


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What the ledger stores about one rule that decided a call."""

    action: str
    layer: str
    compliance: tuple[str, ...] = ()
    owasp: tuple[str, ...] = ()


@dataclass(slots=True)
class Event:
    """One request the gateway decided (a `tools/call` row or a protocol event)."""

    method: str
    decision: str
    outcome: str
    ts: float
    session_id: str = ""
    client: str = ""
    client_version: str = ""
    agent_id: str = ""
    process_name: str = ""
    peer: str = ""
    server_name: str | None = None
    tool_name: str | None = None
    request_id: Any = None
    mode: str | None = None
    enforced_action: str | None = None
    policy_revision: str | None = None
    rule_ids: Sequence[str] = ()
    reasons: Sequence[str] = ()
    redacted_keys: Sequence[str] = ()
    dlp: Any = None
    notes: Mapping[str, Any] | None = None
    params: Mapping[str, Any] | None = None
    response: Mapping[str, Any] | None = None
    duration_ms: float | None = None
    upstream_ms: float | None = None
    error_message: str | None = None
    bytes_in: int = 0
    bytes_out: int = 0
    #: keep only argument names (the call was never checked against the redaction rules)
    withhold_arguments: bool = False
    #: rule id -> what the rule is, for security_rule_events
    rules: Mapping[str, RuleInfo] | None = None
    decision_id: str | None = None

    @property
    def table(self) -> str:
        return "tool_calls" if self.method == "tools/call" else "protocol_events"


@dataclass(frozen=True, slots=True)
class BuildOptions:
    bodies: bool = True
    max_body_bytes: int = 1 << 20
    preview_chars: int = 512


@dataclass(slots=True)
class BuiltRow:
    """An event serialised for the database, still without seq and MACs."""

    table: str
    values: list[Any]
    decision_id: str
    ts: str
    #: JSON of `values`, from which the MAC input is built (see `_chain.event_mac_json`)
    values_json: bytes
    #: (id, size, stored, truncated, content)
    bodies: list[tuple[str, int, int, int, bytes]] = field(default_factory=list)
    #: (idx, rule_id, action, layer, compliance json, owasp json)
    rules: list[tuple[int, str, str, str, str, str]] = field(default_factory=list)


def clean(value: Any) -> str | None:
    """Text safe for both databases: no NUL (PostgreSQL refuses it), no lone surrogates."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    if text.isascii() and "\x00" not in text:
        return text
    if "\x00" in text:
        text = text.replace("\x00", "\\u0000")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _default(obj: Any) -> Any:
    as_dict = getattr(obj, "as_dict", None)
    if callable(as_dict):
        return as_dict()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=_default, option=_DUMP_OPTS)
    except TypeError:
        # Lone surrogates or other text orjson refuses: go through a cleaned repr.
        return orjson.dumps(clean(repr(value)))


_second: list[Any] = [None, ""]


def iso(ts: float) -> str:
    """UTC ISO 8601 with microseconds; the formatted second is reused (rows come many per second)."""
    whole = int(ts)
    if _second[0] != whole:
        _second[1] = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second[0] = whole
    return f"{_second[1]}.{int((ts - whole) * 1_000_000):06d}Z"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _response_preview(response: Mapping[str, Any] | None, limit: int, raw: bytes) -> str | None:
    if response is None:
        return None
    err = response.get("error")
    if isinstance(err, dict):
        return _clip(str(err.get("message", "")), limit)
    result = response.get("result")
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        content = result["content"]
        if len(content) == 1 and not result.get("isError"):  # the usual answer: one text item
            item = content[0]
            if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
                return _clip(item["text"], limit)
        texts = [str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text"]
        if texts:
            prefix = "[isError] " if result.get("isError") else ""
            return _clip(prefix + "\n".join(texts), limit)
    return _clip(raw.decode("utf-8", "replace"), limit)


_NO_DLP = '{"erased":[],"masked":[]}'


def _json_list(values: Sequence[str]) -> str:
    return dumps([v if v.__class__ is str and v.isascii() else clean(v) for v in values]).decode() if values else "[]"


def _dlp_json(event: Event) -> str:
    if not event.redacted_keys and not event.dlp:
        return _NO_DLP
    return dumps(_dlp_fields(event)).decode()


def _dlp_fields(event: Event) -> dict[str, list[str]]:
    """OPA decision-log style: which input fields were erased, which output fields masked."""
    erased = [f"request.arguments.{k}" for k in event.redacted_keys]
    masked: list[str] = []
    found = event.dlp
    if isinstance(found, Mapping):
        erased += [str(x) for x in found.get("erased", []) or []]
        masked += [str(x) for x in found.get("masked", []) or []]
        if not ("erased" in found or "masked" in found):
            masked += [str(k) for k in found]
    elif isinstance(found, list | tuple):
        for item in found:
            if isinstance(item, Mapping):
                where = item.get("path") or item.get("field") or item.get("location") or ""
                kind = item.get("kind") or item.get("type") or item.get("rule") or ""
                masked.append(f"{where}:{kind}" if where and kind else str(where or kind or item))
            else:
                masked.append(str(item))
    elif found:
        masked.append(str(found))
    return {"erased": erased, "masked": masked}


def _request_id(rid: Any) -> str | None:
    if rid is None:
        return None
    if type(rid) is int:
        return str(rid)
    return dumps(rid).decode()


class BodyNames:
    """Names the bodies of one batch: `<batch time>_<SHA-256 of the body>`.

    The hash makes a body tamper-evident (verify recomputes it) and lets equal
    bodies share one row; the prefix, the batch's time in microseconds (hex),
    makes ids grow with time. With bare SHA-256 ids every body was inserted at
    a random place of the id index, and a small batch (a gateway commits every
    50 ms) dirtied an index page per body: at 50 rows a commit the writer
    spent 202-211 us of CPU a row, now 145-158 (bench/ledger_write.py).
    `stored` maps the hashes of bodies this writer committed lately to their
    ids, so repeated bodies (the same tools/list answer) still share one row
    across batches. The body rows' `created` is the prefix's time (`created`), so the id,
    which its event row's MAC covers, covers `created` too; the `_` after the time says so
    (ids of ledgers written before 2026-12-01 have a `-` there, and a `created` of their own).
    """

    __slots__ = ("batch", "created", "prefix", "stored")

    def __init__(self, stored: Mapping[str, str], now_us: int) -> None:
        self.stored = stored
        self.prefix = f"{now_us:014x}_"
        #: the `created` of the bodies this batch stores
        self.created = body_created(now_us)
        #: hash -> id of the bodies first seen in this batch
        self.batch: dict[str, str] = {}

    def name(self, digest: str) -> tuple[str, bool]:
        """(id, whether the body still has to be written)."""
        found = self.stored.get(digest)
        if found is not None:
            self.batch[digest] = found  # keeps it among the recent ones (see Writer._remember)
            return found, False
        found = self.batch.get(digest)
        if found is None:
            found = self.batch[digest] = self.prefix + digest
        return found, True


def body_created(now_us: int) -> str:
    """The `created` of a body named at `now_us` (microseconds since the epoch), as `now_iso` writes it."""
    seconds, micros = divmod(now_us, 1_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{micros:06d}Z"


_HEX = frozenset("0123456789abcdef")


def _is_sha(text: str) -> bool:
    return len(text) == 64 and _HEX.issuperset(text)


@dataclass(frozen=True, slots=True)
class BodyId:
    """What a body's id says about it (see `parse_body_id`)."""

    #: 0: the bare hash; 1: `<time>-<hash>`; 2: `<time>_<hash>`, whose `created` is that time
    version: int
    #: SHA-256 of the whole body
    whole: str
    #: SHA-256 of the stored part, when the body was cut at maxBodyBytes
    stored: str | None = None
    #: the batch time of the prefix (versions 1 and 2), microseconds
    time_us: int | None = None
    #: the whole body's length (version 2, truncated bodies only)
    size: int | None = None


def parse_body_id(body_id: str) -> BodyId | None:
    """The parts of a body id, or None if it is not one the writer makes.

    `<time>_<sha256>`, or `<time>_<sha256>.<sha256 of what is stored>.<size>` for a body cut at
    `maxBodyBytes`; before 2026-12-01 `<time>-<sha256>[.<stored sha256>]`, and before 2026-11-30
    the bare `<sha256>[.<stored sha256>]`.
    """
    version, time_us, rest = 0, None, body_id
    if len(body_id) > 15 and body_id[14] in "-_" and _HEX.issuperset(body_id[:14]):
        version, time_us, rest = (2 if body_id[14] == "_" else 1), int(body_id[:14], 16), body_id[15:]
    parts = rest.split(".")
    if not all(_is_sha(p) for p in parts[:2]):
        return None
    if len(parts) == 1:
        return BodyId(version, parts[0], None, time_us)
    if version < 2 and len(parts) == 2:
        return BodyId(version, parts[0], parts[1], time_us)
    if version == 2 and len(parts) == 3 and parts[2].isdigit() and parts[2].isascii() and len(parts[2]) <= 19 \
            and parts[2] == str(int(parts[2])):
        return BodyId(version, parts[0], parts[1], time_us, int(parts[2]))
    return None


def _body(content: bytes, limit: int, names: BodyNames, bodies: list[tuple[str, int, int, int, bytes]]) -> str:
    """The body's id; the row to write joins `bodies` unless this writer already stored it."""
    digest = hashlib.sha256(content).hexdigest()
    truncated = len(content) > limit
    if truncated:
        content_size, content = len(content), content[:limit]
        # the stored part is verifiable too, and the whole's size is covered by the id (MAC'd in its row)
        digest += f".{hashlib.sha256(content).hexdigest()}.{content_size}"
    body_id, new = names.name(digest)
    if new:
        if truncated:
            bodies.append((body_id, content_size, limit, 1, content))
        else:
            bodies.append((body_id, len(content), len(content), 0, content))
    return body_id


def _request_body(method: str, params: Mapping[str, Any], args: Mapping[str, Any], args_json: bytes) -> bytes:
    """`{"method": ..., "params": ...}` as JSON; a call's arguments, already serialised for the
    row, are spliced in rather than serialised a second time (the usual `{name, arguments}`)."""
    if params.get("arguments") is args and len(params) == 2 and isinstance(params.get("name"), str):
        return b"".join((b'{"method":', dumps(method), b',"params":{"name":', dumps(params["name"]),
                         b',"arguments":', args_json, b"}}"))
    return dumps({"method": method, "params": params})


def build_row(event: Event, options: BuildOptions, replica: str, names: BodyNames) -> BuiltRow:
    """Serialise one event (on the writer thread): in C for the usual event (`_rows.c`), else in Python."""
    if _NATIVE is not None:
        row: BuiltRow | None = _NATIVE(event, options.bodies, options.max_body_bytes, options.preview_chars, replica,
                                       names)
        if row is not None:
            return row
    return build_row_python(event, options, replica, names)


def build_row_python(event: Event, options: BuildOptions, replica: str, names: BodyNames) -> BuiltRow:
    """`build_row` in Python: the reference, and the way for every event `_rows.c` leaves to it."""
    decision_id = event.decision_id or os.urandom(16).hex()
    ts = iso(event.ts)
    params: Mapping[str, Any] = event.params if isinstance(event.params, Mapping) else {}
    in_arguments = event.method in _ARGUMENT_METHODS
    raw_args = params.get("arguments") if in_arguments else params
    args: Mapping[str, Any] = raw_args if isinstance(raw_args, Mapping) else {}
    if event.redacted_keys and args and not event.withhold_arguments:
        # Idempotent: the policy stage already removed them from allowed calls, but a
        # denied call is never redacted on its way in, and its secrets must not land here.
        from mcpwall.policy import redact_arguments

        args = redact_arguments(dict(args), list(event.redacted_keys))
        params = {**params, "arguments": args} if in_arguments else args
    arg_keys = sorted(str(k) for k in args)
    bodies: list[tuple[str, int, int, int, bytes]] = []
    request_body_id = response_body_id = None
    if event.withhold_arguments:
        args_json = dumps({"withheld": "not checked by the policy", "keys": arg_keys})
    else:
        args_json = dumps(args)
        if options.bodies:
            request_body_id = _body(_request_body(event.method, params, args, args_json), options.max_body_bytes,
                                    names, bodies)
    response_json = dumps(event.response) if event.response is not None else b""
    if options.bodies and event.response is not None:
        response_body_id = _body(response_json, options.max_body_bytes, names, bodies)
    error_code = None
    if event.response is not None and isinstance(event.response.get("error"), Mapping):
        code = event.response["error"].get("code")
        error_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    notes = {k: v for k, v in event.notes.items() if k not in _NOTE_SKIP} if event.notes else None
    e = event
    texts: list[Any] = [e.session_id, e.client, e.client_version, e.agent_id, e.process_name, e.peer, e.server_name,
                        e.method, e.tool_name, _request_id(e.request_id), e.decision, e.outcome, e.mode,
                        e.enforced_action, e.policy_revision, e.error_message, replica]
    # This runs once per row: test all the texts at once, clean one by one only if needed.
    strings = [v for v in texts if v.__class__ is str]
    probe = "".join(strings)
    if not probe.isascii() or "\x00" in probe or len(strings) + texts.count(None) != len(texts):
        texts = [clean(v) for v in texts]
    values = [
        decision_id, ts, *texts[:15],
        _json_list(e.rule_ids) if e.rule_ids else "[]", _json_list(e.reasons) if e.reasons else "[]",
        _json_list(e.redacted_keys) if e.redacted_keys else "[]", _dlp_json(e),
        dumps(notes).decode() if notes else "{}", dumps(arg_keys).decode() if arg_keys else "[]", len(args_json),
        _clip(args_json.decode(), options.preview_chars),  # orjson output: valid UTF-8, no raw NUL
        clean(_response_preview(e.response, options.preview_chars, response_json)),
        None if e.duration_ms is None else round(float(e.duration_ms), 3),
        None if e.upstream_ms is None else round(float(e.upstream_ms), 3),
        error_code, texts[15], int(e.bytes_in or 0), int(e.bytes_out or len(response_json)),
        request_body_id, response_body_id, texts[16],
    ]
    return BuiltRow(event.table, values, decision_id, ts, dumps(values), bodies, _rule_rows(event))


def _rule_rows(event: Event) -> list[tuple[int, str, str, str, str, str]]:
    rules = []
    infos = event.rules or {}
    for idx, rule_id in enumerate(event.rule_ids):
        info = infos.get(rule_id)
        if info is None:
            info = RuleInfo(event.enforced_action or event.decision, "builtin" if "." in rule_id else "unknown")
        rules.append((idx, clean(rule_id) or "", info.action, info.layer, dumps(list(info.compliance)).decode(),
                      dumps(list(info.owasp)).decode()))
    return rules


def _native_build() -> Callable[..., BuiltRow | None] | None:
    """`build_row` of `_rows.c` when it was built and is in use (see mcpwall._native), given this
    module's helpers: it calls them for what it does not do itself, so both build the same rows."""
    try:
        module = importlib.import_module("mcpwall.ledger._rows")
    except ImportError:
        return None
    module.configure({"orjson_dumps": orjson.dumps, "dumps": dumps, "default": _default, "option": _DUMP_OPTS,
                      "BuiltRow": BuiltRow, "response_preview": _response_preview, "clean": clean,
                      "rule_rows": _rule_rows, "note_skip": _NOTE_SKIP, "BodyNames": BodyNames, "Event": Event})
    build: Callable[..., BuiltRow | None] = module.build_row
    return build


_NATIVE = _native_build()


def native_build_row() -> Callable[..., BuiltRow | None] | None:
    """`_rows.c`'s build_row(event, bodies, max_body_bytes, preview_chars, replica, names), or None."""
    return _NATIVE


__all__ = ["BodyId", "BodyNames", "BuildOptions", "BuiltRow", "Event", "RuleInfo", "body_created", "build_row",
           "build_row_python", "clean", "dumps", "iso", "native_build_row", "parse_body_id"]
