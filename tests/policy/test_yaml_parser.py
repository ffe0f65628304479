"""Policy YAML is read by libyaml when PyYAML has it, with the same result as the pure-Python parser.

Strategy: each shipped template, SEATBELT_FULL and a few texts that exercise YAML's corners
(anchors and merge keys, block scalars, flow collections, quoting, comments, non-ASCII, an empty
file) go through `_parse_yaml` as the loader calls it, and again with libyaml switched off: the
data and the line of every key must be equal. A broken text raises the same error (message
and line; a control character is still a bare ReaderError, as before) either way, since the
pure-Python parser words it. The fast path is taken (a text libyaml reads never reaches the
pure-Python parser), which is what makes `simulate` start faster (issue 29).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from mcpwall.errors import PolicyError
from mcpwall.policy import TEMPLATES, _loader, template_text
from tests.policy.test_loader import SEATBELT_FULL

CORNERS = {
    "anchors": "base: &b {mode: audit, rules: [{id: a, action: deny}]}\nother:\n  <<: *b\n  extra: [1, 2]\n",
    "block scalars": "rules:\n  - id: x\n    description: |\n      two\n      lines\n    values: >\n      folded\n      text\n",
    "flow and quotes": "a: {b: [1, 'two', \"th\\u00e9ree\"], c: ~, d: yes, e: 0o17, f: 1e3}\n# comment\ng: 'it''s'\n",
    "non-ascii": "rules:\n  - id: ünïcode\n    values: ['café', '日本']\n    action: warn\n",
    "empty": "",
    "comment only": "# nothing here\n",
}
BROKEN = {
    "unclosed flow": "rules: [\n",
    "duplicate key": "mode: enforce\nmode: audit\n",
    "bad indentation": "rules:\n  - id: a\n   action: deny\n",
    "tab": "rules:\n\t- id: a\n",
    "undefined alias": "a: *nope\n",
    "lone surrogate": "a: \ud800\n",
    "control character": "a: \x07\n",
}


def _pure(text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(_loader, "_FAST_LOADER", None)
        return _loader._parse_yaml(text, "policy.yaml")


def _texts() -> dict[str, str]:
    return {**{f"template {name}": template_text(name) for name in TEMPLATES}, "seatbelt": SEATBELT_FULL,
            **CORNERS}


@pytest.mark.parametrize("name", sorted(_texts()))
def test_libyaml_and_the_pure_python_parser_give_the_same_data_and_lines(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _texts()[name]
    assert _loader._parse_yaml(text, "policy.yaml") == _pure(text, monkeypatch)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_file_is_refused_with_the_same_message_and_line(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises((PolicyError, yaml.YAMLError)) as fast:
        _loader._parse_yaml(BROKEN[name], "policy.yaml")
    with pytest.raises((PolicyError, yaml.YAMLError)) as pure:
        _pure(BROKEN[name], monkeypatch)
    assert (type(fast.value), str(fast.value)) == (type(pure.value), str(pure.value))
    assert getattr(fast.value, "line", None) == getattr(pure.value, "line", None)


def test_a_text_libyaml_reads_never_reaches_the_pure_python_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _loader._FAST_LOADER is yaml.CSafeLoader  # PyYAML's wheels ship libyaml

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pure-Python parser was used")

    monkeypatch.setattr(yaml, "SafeLoader", refuse)
    data, lines = _loader._parse_yaml(template_text("default"), "default.yaml")
    assert data["defaultAction"] == "deny"
    assert lines[("rules", 0)] > 1
