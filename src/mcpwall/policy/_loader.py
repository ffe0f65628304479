"""Reading policy files: YAML with line numbers, `extends`, and `corp`.

Every way into a policy (the gateway, `simulate`, `test-policy`, `fuzz`, the
dashboard) goes through `load_policy`, so a file decides the same everywhere
(mcp-seatbelt's `simulate` ignored `extends`; see docs/COMPATIBILITY.md).

Errors are `PolicyError`s that name the file, the line and the rule id.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import orjson
import yaml

from mcpwall.errors import PolicyError
from mcpwall.policy import _plain

if TYPE_CHECKING:  # pydantic and the models are imported when a file is validated with them (issue 29)
    from mcpwall.policy._model import Allowlist, Notifications, PolicyFile, Rule, ServerSpec, Webhook

Path_ = tuple[str | int, ...]

log = logging.getLogger("mcpwall.policy")


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a rule was written, for error messages and traces."""

    file: str
    line: int | None


@dataclass(frozen=True, slots=True)
class PlacedRule:
    rule: Rule
    origin: Origin


@dataclass(frozen=True)
class ResolvedPolicy:
    """A policy after `extends` and `corp` are merged; the input of `compile_policy`."""

    mode: str
    default_action: str
    default_timeout_ms: int
    rules: tuple[PlacedRule, ...]
    corp_rules: tuple[PlacedRule, ...]
    corp_mode: str
    allowlist: Allowlist
    corp_allowlist: Allowlist
    allow_sampling: bool
    version: str
    notifications: Notifications
    servers: Mapping[str, ServerSpec]
    sections: Mapping[str, Any]
    files: tuple[str, ...] = field(default=())

    @property
    def revision(self) -> str:
        """A short content hash: the same decisions come from the same revision."""
        doc = {
            "mode": self.mode, "default": self.default_action, "timeout": self.default_timeout_ms,
            "rules": [p.rule.model_dump(exclude_none=True) for p in self.rules],
            "corp": [p.rule.model_dump(exclude_none=True) for p in self.corp_rules],
            "corp_mode": self.corp_mode,
            "allow": self.allowlist.model_dump(), "corp_allow": self.corp_allowlist.model_dump(),
            "sampling": self.allow_sampling,
        }
        return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:12]


DEFAULT_TIMEOUT_MS = 30_000


# --------------------------------------------------------------------------- YAML

#: libyaml's parser, where PyYAML was built with it: the shipped default policy (460 lines) parses in
#: 4 ms instead of 35, a tenth of a `simulate` (issue 29). The same constructor and resolver turn its
#: nodes into data; a text it refuses is parsed again by the pure-Python parser, whose messages a
#: PolicyError quotes, so an error reads as it always did.
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)


def _fast_parse(text: str) -> tuple[Any, yaml.Node | None] | None:
    """(data, node) from libyaml, or None when it is missing or refuses the text."""
    if _FAST_LOADER is None:
        return None
    try:
        loader = _FAST_LOADER(text)
    except ValueError:  # text libyaml cannot take (a lone surrogate)
        return None
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def _parse_yaml(text: str, file: str) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML, returning the data and a map from key path to 1-based line."""
    fast = _fast_parse(text)
    if fast is not None:
        data, node = fast
        if node is None:
            return None, {}
        lines: dict[Path_, int] = {}
        _walk(node, (), lines, file)
        return data, lines
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise PolicyError(f"invalid YAML: {exc.problem or exc}", file=file, line=line) from exc
    except yaml.YAMLError as exc:
        raise PolicyError(f"invalid YAML: {exc}", file=file) from exc
    finally:
        loader.dispose()
    lines = {}
    _walk(node, (), lines, file)
    return data, lines


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int], file: str) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen and key != "<<":
                raise PolicyError(f"duplicate key {key!r}", file=file, line=key_node.start_mark.line + 1)
            seen.add(key)
            lines[(*path, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*path, key), lines, file)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, file)


def _line_for(loc: Sequence[str | int], lines: Mapping[Path_, int]) -> int | None:
    path: Path_ = tuple(loc)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())


def _rule_id_at(data: Any, loc: Sequence[str | int]) -> str | None:
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int) and isinstance(data, dict):
        rules = data.get("rules")
        if isinstance(rules, list) and loc[1] < len(rules) and isinstance(rules[loc[1]], dict):
            rid = rules[loc[1]].get("id")
            return str(rid) if rid is not None else f"#{loc[1]}"
    if len(loc) >= 4 and loc[0] == "corp" and loc[1] == "rules" and isinstance(data, dict):
        return _rule_id_at(data.get("corp"), loc[1:])
    return None


def _format_loc(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _kinds(plain: bool) -> ModuleType:
    """Where the classes a policy is made of come from: the pydantic models, or for a `plain` read
    `_plain`'s dataclasses (a one-shot command that need not import pydantic)."""
    return importlib.import_module("mcpwall.policy._plain" if plain else "mcpwall.policy._model")


def parse_policy_text(text: str, file: str = "<policy>", *, plain: bool = False) -> tuple[PolicyFile, dict[Path_, int]]:
    """Validate one YAML document as a `PolicyFile` (no `extends` resolution).

    `plain`: a document valid as written comes as `_plain`'s dataclasses, read without pydantic;
    any other is validated by the models, so what they refuse reads the same either way."""
    data, lines = _parse_yaml(text, file)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError("a policy must be a YAML mapping", file=file, line=1)
    if plain and (doc := _plain.document(data)) is not None:
        return doc, lines
    from pydantic import ValidationError

    from mcpwall.policy._model import PolicyFile

    try:
        return PolicyFile.model_validate(data), lines
    except ValidationError as exc:
        errors = exc.errors()
        if isinstance(data.get("corp"), dict):
            # `corp` is a path or a mapping: for a mapping, the mapping's own error is the one to tell
            errors = [e for e in errors if tuple(e["loc"][:2]) != ("corp", "str")] or errors
        err = errors[0]
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        # pydantic appends the union member name (e.g. 'CorpPolicy'); drop such tags.
        loc = [p for p in loc if not (isinstance(p, str) and p[:1].isupper())]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key {loc[-1]!r}" if loc else "unknown key"
        elif err["type"] == "literal_error":
            msg = f"{msg}, got {err.get('input')!r}"
        where = _format_loc(loc)
        raise PolicyError(f"{where}: {msg}" if where else msg, file=file,
                          line=_line_for(loc, lines), rule_id=_rule_id_at(data, loc)) from exc


# --------------------------------------------------------------------------- files

@dataclass
class _Layer:
    """A file after its own `extends` are merged."""

    doc: PolicyFile
    rules: list[PlacedRule]
    allowlist: dict[str, list[str]]
    webhooks: list[Webhook]
    servers: dict[str, ServerSpec]
    sections: dict[str, Any]
    files: list[str]


_SECTIONS = ("auth", "dlp", "honeytokens", "ledger", "rbac", "stages", "telemetry")
_SCALARS = ("version", "mode", "defaultAction", "defaultTimeoutMs", "allowSampling", "corp")


def locate_section(files: Sequence[str], message: str) -> PolicyError | None:
    """A section's error (`ledger: ...`, `stages.pins: ...`, `policy dlp: ...`) as a PolicyError
    naming the file and line of that section (the first file of the extends chain that sets it),
    or None when no file sets it."""
    m = re.match(r"(?:policy )?([A-Za-z]+(?:\.[A-Za-z]+)*)", message)
    path = tuple(m.group(1).split(".")) if m and m.group(1).split(".")[0] in _SECTIONS else ()
    for file in files:  # the including file first: its sections win
        if not path:
            break
        try:
            _, lines = _parse_yaml(Path(file).read_text(encoding="utf-8"), file)
        except (OSError, PolicyError, UnicodeDecodeError):
            continue
        for depth in range(len(path), 0, -1):
            if path[:depth] in lines:
                return PolicyError(message, file=file, line=lines[path[:depth]])
    return None  # not about a section of these files (a key, a URL on the command line...)


def _union(a: list[str], b: Sequence[str]) -> list[str]:
    return a + [x for x in b if x not in a]


def _load_layer(path: Path, chain: tuple[Path, ...], plain: bool = False) -> tuple[_Layer, dict[str, Any]]:
    resolved = path.resolve()
    if resolved in chain:
        cycle = " -> ".join(str(p) for p in (*chain, resolved))
        raise PolicyError(f"extends cycle: {cycle}", file=str(path))
    try:
        text = resolved.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PolicyError("policy file not found", file=str(path)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read policy file: {exc}", file=str(path)) from exc
    doc, lines = parse_policy_text(text, str(path), plain=plain)
    scalars: dict[str, Any] = {}
    layer = _Layer(doc=doc, rules=[], allowlist={"tools": [], "paths": [], "hosts": [], "envVars": []},
                   webhooks=[], servers={}, sections={}, files=[str(resolved)])
    for ext in doc.extends or []:
        base_path = Path(os.path.expanduser(ext))
        if not base_path.is_absolute():
            base_path = resolved.parent / base_path
        if not base_path.exists():
            raise PolicyError(f"extended policy file not found: {base_path}", file=str(path),
                              line=lines.get(("extends",)))
        base, base_scalars = _load_layer(base_path, (*chain, resolved), plain)
        _merge_into(layer, base)
        if scalars.get("corp") is not None and base_scalars.get("corp") is not None \
                and not _same_corp(scalars["corp"], base_scalars["corp"]):
            raise PolicyError(f"{base_path} names another corp than a file extended before it; a corp "
                              "constrains everything that extends it and cannot be replaced", file=str(path),
                              line=lines.get(("extends",)))
        scalars.update({k: v for k, v in base_scalars.items() if v is not None})
    own = [PlacedRule(rule, Origin(str(path), lines.get(("rules", i)))) for i, rule in enumerate(doc.rules)]
    _merge_rules(layer.rules, _own_rules(own))
    if doc.allowlist:
        for key in layer.allowlist:
            layer.allowlist[key] = _union(layer.allowlist[key], getattr(doc.allowlist, key))
    if doc.notifications and doc.notifications.webhooks:
        layer.webhooks += [w for w in doc.notifications.webhooks if w not in layer.webhooks]
    layer.servers.update(doc.servers or {})
    for name in _SECTIONS:
        value = getattr(doc, name)
        if value is not None:
            base_value = layer.sections.get(name)
            if isinstance(value, dict) and isinstance(base_value, dict):
                value = {**base_value, **value}
            layer.sections[name] = value
    base_corp = scalars.get("corp")
    for name in _SCALARS:
        value = getattr(doc, name)
        if value is not None:
            scalars[name] = value
    if isinstance(doc.corp, str):
        corp_path = Path(os.path.expanduser(doc.corp))
        scalars["corp"] = corp_path if corp_path.is_absolute() else resolved.parent / corp_path
    if base_corp is not None and doc.corp is not None and not _same_corp(scalars["corp"], base_corp):
        # SPEC 3: a profile never loosens a corp; naming another (or an empty) one would.
        raise PolicyError("this file names a corp, but a file it extends already names another; a corp "
                          "constrains everything that extends it and cannot be replaced", file=str(path),
                          line=lines.get(("corp",)))
    return layer, scalars


def _same_corp(a: Any, b: Any) -> bool:
    if isinstance(a, Path) and isinstance(b, Path):
        return a.resolve() == b.resolve()
    return bool(a == b)


def _own_rules(placed: list[PlacedRule]) -> list[PlacedRule]:
    """A file's own rules, checked before they are merged.

    Rules that repeat an id all apply, as in mcp-seatbelt, under `id#2`, `id#3`...: a later rule
    of the same id overriding the earlier one is how `extends` works between files; within one
    file it would make a rule vanish without a word (a deny, say). A tool written the way an
    aggregating client sees it (`fs__delete_file`) never matches (rules see the server's own
    name and the server separately), so it is warned about.
    """
    seen: dict[str, int] = {}
    out = []
    for p in placed:
        qualified = [t for t in p.rule.tools or [] if "__" in t.strip("_")]
        if qualified:
            server, _, tool = qualified[0].partition("__")
            log.warning("%s:%s: rule %r names tools as an aggregating client sees them (%s); rules see the "
                        "server's own tool name: write `tools: [%s]` with `servers: [%s]`", p.origin.file,
                        p.origin.line or "?", p.rule.id, ", ".join(qualified), tool, server)
        n = seen[p.rule.id] = seen.get(p.rule.id, 0) + 1
        if n > 1:
            new_id = f"{p.rule.id}#{n}"
            log.warning("%s:%s: rule id %r is used again in the same file; both rules apply, this one as %r",
                        p.origin.file, p.origin.line or "?", p.rule.id, new_id)
            p = PlacedRule(p.rule.model_copy(update={"id": new_id}), p.origin)
        out.append(p)
    return out


def _merge_rules(into: list[PlacedRule], rules: Sequence[PlacedRule]) -> None:
    """Same id overrides in place (keeping the base's position); new ids append."""
    index = {p.rule.id: i for i, p in enumerate(into)}
    for placed in rules:
        if placed.rule.id in index:
            into[index[placed.rule.id]] = placed
        else:
            index[placed.rule.id] = len(into)
            into.append(placed)


def _merge_into(layer: _Layer, base: _Layer) -> None:
    _merge_rules(layer.rules, base.rules)
    for key in layer.allowlist:
        layer.allowlist[key] = _union(layer.allowlist[key], base.allowlist[key])
    layer.webhooks += [w for w in base.webhooks if w not in layer.webhooks]
    layer.servers.update(base.servers)
    for name, value in base.sections.items():
        layer.sections[name] = value
    layer.files += [f for f in base.files if f not in layer.files]


def _load_corp(corp: Any, origin_file: str, plain: bool = False) -> tuple[list[PlacedRule], Allowlist, str, list[str]]:
    kinds = _kinds(plain)
    if corp is None:
        return [], kinds.Allowlist(), "enforce", []
    if not isinstance(corp, str | os.PathLike):  # an inline corp (a CorpPolicy: never a plain read)
        rules = [PlacedRule(r, Origin(origin_file, None)) for r in corp.rules]
        allowlist, where = corp.allowlist or kinds.Allowlist(), origin_file
        mode, files = corp.mode, []
    else:
        layer, scalars = _load_layer(Path(corp), (), plain)
        rules, allowlist, where = layer.rules, kinds.Allowlist(**layer.allowlist), str(corp)
        mode, files = scalars.get("mode") or "enforce", layer.files
    unused = [key for key in ("paths", "envVars") if getattr(allowlist, key)]
    if unused:
        # A corp's allowlist exempts from its own rules by tool (and, for the built-in fetch tool, by
        # host); paths and env var names are the profile's to allowlist. Said, not silently ignored.
        log.warning("%s: the corp's allowlist.%s has no effect (a corp allowlists tools and hosts; allowlist "
                    "paths and env vars in the profile)", where, " and allowlist.".join(unused))
    return rules, allowlist, mode, files


def load_policy(path: str | os.PathLike[str], *, plain: bool = False) -> ResolvedPolicy:
    """Load a policy file with its `extends` chain and `corp` base (`plain`: see `parse_policy_text`)."""
    kinds = _kinds(plain)
    layer, scalars = _load_layer(Path(path), (), plain)
    corp_rules, corp_allowlist, corp_mode, corp_files = _load_corp(scalars.get("corp"), str(path), plain)
    corp_ids = {p.rule.id: p for p in corp_rules}
    for placed in layer.rules:
        if placed.rule.id in corp_ids:
            raise PolicyError(
                f"would override the corp rule of the same id ({corp_ids[placed.rule.id].origin.file}); "
                "corp rules cannot be overridden, choose another id",
                file=placed.origin.file, line=placed.origin.line, rule_id=placed.rule.id)
    return ResolvedPolicy(
        mode=scalars.get("mode") or "enforce",
        default_action=_canonical_action(scalars.get("defaultAction") or "deny"),
        default_timeout_ms=scalars.get("defaultTimeoutMs") or DEFAULT_TIMEOUT_MS,
        rules=tuple(layer.rules),
        corp_rules=tuple(corp_rules),
        corp_mode=corp_mode,
        allowlist=kinds.Allowlist(**layer.allowlist),
        corp_allowlist=corp_allowlist,
        allow_sampling=scalars.get("allowSampling", True) is not False,
        version=str(scalars.get("version") or "1"),
        notifications=kinds.Notifications(webhooks=layer.webhooks or None),
        servers=dict(layer.servers),
        sections=dict(layer.sections),
        files=tuple(layer.files + corp_files),
    )


def resolve_document(doc: PolicyFile, file: str = "<policy>") -> ResolvedPolicy:
    """Resolve a policy that exists only in memory (built-in defaults, templates, tests).

    `extends` and a corp *path* are resolved relative to the working directory. A plain `doc`
    (`parse_policy_text(..., plain=True)`) has its bases read plain too.
    """
    plain = _plain.is_plain(doc)
    kinds = _kinds(plain)
    corp_rules, corp_allowlist, corp_mode, corp_files = _load_corp(
        Path(doc.corp) if isinstance(doc.corp, str) else doc.corp, file, plain)
    layer = _Layer(doc=doc, rules=[], allowlist={"tools": [], "paths": [], "hosts": [], "envVars": []},
                   webhooks=[], servers={}, sections={}, files=[])
    for ext in doc.extends or []:
        base, _ = _load_layer(Path(ext), (), plain)
        _merge_into(layer, base)
    _merge_rules(layer.rules, _own_rules([PlacedRule(r, Origin(file, None)) for r in doc.rules]))
    allow = doc.allowlist or kinds.Allowlist()
    return ResolvedPolicy(
        mode=doc.mode or "enforce",
        default_action=_canonical_action(doc.defaultAction or "deny"),
        default_timeout_ms=doc.defaultTimeoutMs or DEFAULT_TIMEOUT_MS,
        rules=tuple(layer.rules),
        corp_rules=tuple(corp_rules),
        corp_mode=corp_mode,
        allowlist=kinds.Allowlist(**{k: _union(layer.allowlist[k], getattr(allow, k)) for k in layer.allowlist}),
        corp_allowlist=corp_allowlist,
        allow_sampling=doc.allowSampling is not False,
        version=doc.version or "1",
        notifications=doc.notifications or kinds.Notifications(),
        servers=dict(doc.servers or {}),
        sections={k: getattr(doc, k) for k in _SECTIONS if getattr(doc, k) is not None},
        files=tuple(corp_files),
    )


def _canonical_action(action: str) -> str:
    return "deny" if action == "block" else action


__all__ = ["Origin", "PlacedRule", "ResolvedPolicy", "load_policy", "locate_section", "parse_policy_text",
           "resolve_document"]
