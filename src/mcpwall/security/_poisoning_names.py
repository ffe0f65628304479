"""Names: tools that pass for other tools, and parameters that ask the model about itself.

A model picks tools by name and description. A second `read_file` on another
server, a `Read_File`, a `read_fіle` with a Cyrillic і, a `read_file_v2` or a
`best_read_file` next to the real one all compete for the same calls
(shadowing and squatting). And a tool has no use for the name of the model
calling it, its system prompt or the list of its other tools: parameters that
ask for them harvest the agent's context (an out-of-scope parameter).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mcpwall.security._poisoning_chars import visible_text

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SEPARATORS = re.compile(r"[\s_\-.:/]+")
#: Words that only dress up a copy: "read_file_v2", "best_read_file", "secure_read_file".
_DECOYS = frozenset({
    "new", "latest", "best", "premium", "pro", "ultimate", "advanced", "enhanced", "official", "secure",
    "safe", "fixed", "updated", "improved", "real", "true", "original", "plus", "ultra", "super", "better",
    "verified", "legacy", "beta", "alt", "final", "stable", "prime", "top", "trusted", "correct", "proper",
    "actual", "genuine", "authentic", "certified", "optimized", "optimised", "smart", "turbo", "next",
})
_VERSION = re.compile(r"v?\d+|v")
#: Verbs that mean the same to a model choosing a tool.
_SYNONYMS = ({"get", "fetch", "retrieve", "obtain", "load", "pull"}, {"create", "make", "add", "generate", "new"},
             {"delete", "remove", "erase", "destroy", "drop"}, {"search", "find", "lookup", "query"},
             {"send", "post", "dispatch", "submit"}, {"update", "modify", "edit", "change"})
#: A capital I after a small letter reads as an l in most fonts ("send_emaiI").
_CAPITAL_I = re.compile(r"(?<=[a-z])I(?![A-Z])")
_DIGIT_LOOKALIKES = str.maketrans({"0": "o", "1": "l", "3": "e", "5": "s", "7": "t", "|": "l"})

#: Parameter names that ask for the calling model's identity or context.
_HARVEST_NAME = re.compile(
    r"^(?:(?:llm|assistant|chatbot|caller|calling|ai)_(?:model_)?(?:name|id|version|identity|type|provider|vendor)"
    r"|(?:llm|assistant|chatbot)_model|model_identity"
    r"|system_(?:prompt|message|instructions?)s?|(?:full_|entire_)?(?:conversation|chat|dialog|dialogue)_(?:history|log|transcript|context)"
    r"|(?:previous|prior|past)_(?:messages|turns|conversation)|context_window|hidden_instructions?"
    r"|(?:tools?|functions?)_(?:list|names|available)|(?:available|all|other)_(?:tools|functions)|list_of_tools"
    r"|side_?note|internal_(?:notes?|thoughts|reasoning)|chain_of_thought|reasoning_trace)$")
_HARVEST_TEXT = re.compile(
    r"\b(?:name|version|identity|type|vendor|provider)\s+of\s+(?:the|your|this)\s+(?:llm|ai|language model|model"
    r"|assistant|agent|chatbot)\b|\b(?:llm|model|assistant|agent) (?:that|which|who) (?:is )?(?:calls?|calling"
    r"|invokes?|invoking|uses?|using) this tool\b|\byour (?:system prompt|instructions|conversation|model name)\b"
    r"|\b(?:system prompt|conversation so far|entire conversation|full conversation|chat history)\b"
    r"|\b(?:list|names) of (?:all )?(?:the )?(?:available |other )?tools\b", re.IGNORECASE)


#: Parameters that ask for one of the user's secrets, by name or by what their description asks for.
_SECRET_NAME = re.compile(
    r"^(?:(?:user|users|account|login|email|bank|wallet|master|root|admin|my|your)_)?(?:password|passwd|passphrase"
    r"|ssh_(?:private_)?key|private_key|secret_key|(?:aws_)?secret_access_key|credit_card(?:_number)?|card_number|cvv"
    r"|cvc|pin|pin_code|card_pin|two_factor_code|(?:2fa|mfa|otp|totp|verification|one_time)_code|otp|totp|seed_phrase|wallet_seed|mnemonic|recovery_phrase|env_vars|environment_variables|env_dump|api_keys|session_cookies?)$")
_SECRET_ASK = re.compile(
    r"^\W*(?:(?:the|your|a|an|any|all|contents? of|value of)\s+)*(?:(?:user'?s|users'|their)\s+)?(?:[\w-]+\s+){0,2}?"
    r"(?:password|passphrase|private key|ssh key|secret access key|card number|credit card|cvv|seed phrase|recovery"
    r" phrase|2fa code|mfa code|otp|one-time code|verification code|recovery"
    r" phrase|mnemonic|(?:all )?environment variables|(?:api )?(?:keys|tokens|secrets|passwords) (?:that )?the user (?:has )?"
    r"(?:shared|pasted|entered|typed|mentioned|given))\b", re.IGNORECASE)
#: What a tool that has a use for a secret is about (signing in, a vault, a database, a wallet, a payment...).
_SECRET_SCOPE = re.compile(
    r"\b(?:auth\w*|log ?ins?|logon|sign\w*|passwords?|passphrases?|credentials?|tokens?|keys?|secrets?|vaults?|keychains?"
    r"|accounts?|users?|registr(?:y|ies)|connect\w*|databases?|db|ssh|sftp|ftp|wallets?|payments?|pay|cards?|checkout"
    r"|billing|encrypt\w*|decrypt\w*|unlock\w*|configur\w*|setup|api|sessions?|smtp|imap|mail|e-?mails?|sudo|admin\w*"
    r"|identity|oauth|jwt|certificates?|env\w*|deploy\w*|servers?|hosts?|cloud|aws|gcp|azure|git\w*|bank\w*"
    r"|variables?|process\w*|shell|terminal|crypto\w*|bitcoin|ethereum)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class NameFinding:
    kind: str
    severity: str
    evidence: str


def words(name: str) -> list[str]:
    """The words of a tool name, whatever its casing: "getHTTPStatus_v2" -> get, http, status, v, 2."""
    return list(_words(name))


@functools.lru_cache(maxsize=8192)
def _words(name: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in _SEPARATORS.split(name):
        out += [w.lower() for w in _CAMEL.findall(part)] if part.isascii() else [part.lower()]
    return tuple(w for w in out if w)


@functools.lru_cache(maxsize=8192)
def skeleton(name: str) -> str:
    """What a name looks like: case, separators, width and look-alike letters and digits folded away."""
    folded = unicodedata.normalize("NFKC", visible_text(name)).casefold()
    return _SEPARATORS.sub("", folded).translate(_DIGIT_LOOKALIKES)


def _mixed_script(name: str) -> str | None:
    scripts = set()
    for ch in name:
        if ch.isalpha():
            scripts.add(unicodedata.name(ch, "UNKNOWN").split(" ")[0])
    # Latin mixed with another script ("read_fіle", Cyrillic і), or styled letters (fullwidth, math bold);
    # a name wholly in one other script (Japanese, Russian) is not a disguise.
    if ("LATIN" in scripts and len(scripts) > 1) or scripts & {"FULLWIDTH", "MATHEMATICAL"}:
        return ", ".join(sorted(scripts))
    return None


def _oddity(name: str) -> int:
    """How unusual a tool name's spelling is: non-ASCII, capitals, mixed separators."""
    score = 0
    if not name.isascii():
        score += 4
    if any(c.isupper() for c in name):
        score += 2
    if len({c for c in name if c in "_-."}) > 1:
        score += 1
    return score


def _is_decoy(word: str) -> bool:
    return word in _DECOYS or bool(_VERSION.fullmatch(word))


def _dressed_copy(mine: list[str], theirs: list[str]) -> list[str] | None:
    """The decoy words if `mine` is `theirs` in order with only decoy words added."""
    if len(mine) <= len(theirs) or len(theirs) < 2:
        return None
    extra, j = [], 0
    for w in mine:
        if j < len(theirs) and w == theirs[j]:
            j += 1
        else:
            extra.append(w)
    return extra if j == len(theirs) and all(_is_decoy(w) for w in extra) else None


def _synonym_swap(mine: list[str], theirs: list[str]) -> bool:
    if len(mine) != len(theirs) or len(mine) < 3 or mine[1:] != theirs[1:] or mine[0] == theirs[0]:
        return False
    return any(mine[0] in group and theirs[0] in group for group in _SYNONYMS)


class NameIndex:
    """Every server's tool names, indexed by how they look, so one name is checked against
    thousands without comparing it with each (a gateway lists many servers' tools at once)."""

    def __init__(self, peers: Mapping[str, Iterable[str]]) -> None:
        self.servers_of: dict[str, list[str]] = {}
        self.by_skeleton: dict[str, list[tuple[str, str]]] = {}
        self.by_bag: dict[tuple[str, ...], list[tuple[str, str]]] = {}
        self.by_core: dict[tuple[str, ...], list[tuple[str, str]]] = {}
        self.by_tail: dict[tuple[str, ...], list[tuple[str, str]]] = {}
        for server, names in peers.items():
            for name in names:
                entry = (server, name)
                self.servers_of.setdefault(name, []).append(server)
                w = _words(name)
                self.by_skeleton.setdefault(skeleton(name), []).append(entry)
                if len(w) > 1:
                    self.by_bag.setdefault(tuple(sorted(w)), []).append(entry)
                if len(w) >= 2:
                    self.by_core.setdefault(_core(w), []).append(entry)
                if len(w) >= 3:
                    self.by_tail.setdefault(w[1:], []).append(entry)

    def candidates(self, name: str) -> list[tuple[str, str]]:
        w = _words(name)
        seen: dict[tuple[str, str], None] = {}
        for entry in (*self.by_skeleton.get(skeleton(name), ()), *self.by_bag.get(tuple(sorted(w)), ()),
                      *self.by_core.get(_core(w), ()), *self.by_tail.get(w[1:], ())):
            seen.setdefault(entry, None)
        return list(seen)


def _core(w: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(x for x in w if not _is_decoy(x))


def name_findings(name: str, server: str, peers: Mapping[str, Iterable[str]],
                  index: NameIndex | None = None) -> list[NameFinding]:
    """Collisions and look-alikes of `name` against the tools of every server (`peers`: server -> names).

    The same name on another server is a collision; a name that differs only in
    case, separators, look-alike characters, word order or decoy words ("v2",
    "best", "secure") is a look-alike, on the same server or another."""
    index = index or NameIndex(peers)
    found: list[NameFinding] = []
    mine_words, mine_skel = words(name), skeleton(name)
    scripts = _mixed_script(name)
    if scripts:
        found.append(NameFinding("lookalike_name", "high", f"name {name!r} mixes scripts ({scripts})"))
    collision = [s for s in sorted(set(index.servers_of.get(name, ()))) if s != server]
    as_l = skeleton(_CAPITAL_I.sub("l", name))
    for other_server, other in index.by_skeleton.get(as_l, ()) if as_l != mine_skel else ():
        where = f"{other!r}" + (f" on server {other_server!r}" if other_server != server else "")
        found.append(NameFinding("lookalike_name", "high", f"{name!r} passes for {where} with a capital I for an l"))
    for other_server, other in index.candidates(name):
        if other == name:
            continue
        theirs = words(other)
        where = f"{other!r}" + (f" on server {other_server!r}" if other_server != server else "")
        if skeleton(other) == mine_skel or (sorted(theirs) == sorted(mine_words) and len(theirs) > 1):
            how = ("only in case, separators or look-alike characters" if skeleton(other) == mine_skel
                   else "in word order only")
            odd = _oddity(name) - _oddity(other)
            if odd < 0:
                continue  # the other one is the odd one out; it gets the finding
            if odd == 0 and other_server != server and _SEPARATORS.sub("", name) == _SEPARATORS.sub("", other):
                # list_databases beside another server's list-databases: one name in two conventions,
                # the collision of two servers that do the same thing (no spelling is the impostor's)
                collision.append(f"{other_server} (as {other!r})")
                continue
            # Which of two equal-looking names is the impostor? The odder spelling; when neither
            # is odder, report both without blocking either (else one server could hide another's tool).
            found.append(NameFinding("lookalike_name", "high" if odd > 0 else "medium",
                                     f"{name!r} differs from {where} {how}"))
        elif (extra := _dressed_copy(mine_words, theirs)) is not None:
            found.append(NameFinding("lookalike_name", "high",
                                     f"{name!r} is {where} with {', '.join(repr(w) for w in extra)} added"))
        elif _synonym_swap(mine_words, theirs):
            found.append(NameFinding("lookalike_name", "medium", f"{name!r} is {where} with a synonymous verb"))
    if collision:
        found.append(NameFinding("name_collision", "medium",
                                 f"{name!r} is also offered by server(s) {', '.join(sorted(set(collision)))}"))
    # one finding per kind, the most severe first
    found.sort(key=lambda f: f.severity != "high")
    seen: set[str] = set()
    unique = []
    for f in found:
        if f.kind not in seen:
            seen.add(f.kind)
            unique.append(f)
    return unique


#: Levels of `properties`/`items` followed (the walk reports anything deeper as unscannable).
_MAX_DEPTH = 64


def _properties(schema: Any, path: str = "", depth: int = 0) -> Iterable[tuple[str, str, dict[str, Any]]]:
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            if isinstance(sub, dict):
                yield str(key), f"{path}{key}"[:512], sub
                yield from _properties(sub, f"{path}{key}."[:512], depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _properties(items, f"{path}[]."[:512], depth + 1)


def harvesting_params(schema: Any) -> list[tuple[str, str]]:
    """Parameters asking for the model's identity, system prompt, conversation or tool list: (path, evidence)."""
    out = []
    for key, path, sub in _properties(schema):
        snake = "_".join(words(key))
        text = " ".join(str(sub.get(k, "")) for k in ("description", "title") if isinstance(sub.get(k), str))
        if _HARVEST_NAME.match(snake):
            out.append((path, f"parameter {path!r} asks for the agent's own context"))
        elif text and (m := _HARVEST_TEXT.search(visible_text(text))):
            out.append((path, f"parameter {path!r} asks for the agent's own context: \u201c{m.group()}\u201d"))
    return out


def out_of_scope_params(name: str, description: Any, schema: Any) -> list[tuple[str, str]]:
    """Parameters asking for a secret (a password, an SSH or wallet key, a card number, the environment)
    of a tool whose name and description are about nothing that needs one (a weather or a joke tool):
    (path, evidence). An auth, vault, database or wallet tool that takes a password is not one."""
    about = f"{' '.join(words(name))} {description if isinstance(description, str) else ''}"
    if _SECRET_SCOPE.search(visible_text(about)):
        return []
    out = []
    for key, path, sub in _properties(schema):
        text = " ".join(str(sub.get(k, "")) for k in ("description", "title") if isinstance(sub.get(k), str))
        if _SECRET_NAME.match("_".join(words(key))) or (text and _SECRET_ASK.search(visible_text(text))):
            out.append((path, f"parameter {path!r} asks for a secret a tool about {' '.join(words(name))!r} has no "
                              "use for"))
    return out


__all__ = ["NameFinding", "NameIndex", "harvesting_params", "name_findings", "out_of_scope_params", "skeleton", "words"]
