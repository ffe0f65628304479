"""The thin RE2::Set binding (`_re2set.cpp`): the same answers as google-re2's binding."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwall.policy import PolicyEngine, _match
from mcpwall.policy._match import PatternSet, native_sets

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from policy_eval import call_stream, generated_policy

_compile = native_sets()
needs_binding = pytest.mark.skipif(_compile is None, reason="the RE2 binding is not built (or MCPWALL_PURE=1)")

# Texts where a binding could go wrong: non-ASCII (UTF-8 read in place), a lone surrogate
# (no UTF-8 form: encoded with surrogatepass, as google-re2 is given), NUL, the empty
# text, line breaks against ^ and $, case, a long text, fullwidth dots.
AWKWARD = [
    "", "/etc", "/ETC/passwd", "/etc\n", "\n/etc/shadow", "/home/u/.ssh/id_rsa", "C:\\Windows\\system32",
    "ça va /workspace/é", "/étc/passwd", "/etc/pa\u0073\u0073wd", "bad \ud800 surrogate /etc", "\udfff",
    "nul\x00byte", "%00", "..／..／etc", "．．/etc", "rm -rf /", "RM -RF /", "bash -c 'id'", "http://127.0.0.1:8080/x",
    "https://10.0.0.1/", "password", "PassWord", "tok\u00e9n", "x" * 200_000 + "/etc/passwd", "/workspace/" * 1000,
    "\u202e/etc", "😀 /root/", "' OR 1=1 --", "${jndi:ldap://x}",
]


def _sets(policy: object) -> tuple[PatternSet, PatternSet]:
    fast = policy.fast  # type: ignore[attr-defined]
    kinds, rules = fast.kinds, fast.rules
    spec = [(i, r.matcher.patterns) for i, r in enumerate(rules) if kinds[i] and r.matcher is not None]
    return PatternSet(spec), PatternSet(spec, native=False)


@needs_binding
@pytest.mark.parametrize("which", ["default", "generated-1000"])
def test_masks_equal_google_re2s_on_varied_and_awkward_texts(which: str) -> None:
    rng = random.Random(3)
    if which == "default":
        policy = PolicyEngine.from_template("default").compiled
        calls = call_stream(4000, rng)
    else:
        policy = generated_policy(1000, rng)  # owners past bit 63: the Python-int path
        calls = call_stream(4000, rng, extra_tools=1000)
    native, pybind = _sets(policy)
    assert native._native_mask is not None
    assert pybind._native_mask is None
    texts = [str(v) for c in calls for v in c.arguments.values()] + AWKWARD
    texts += [f"/srv/app{i}/x" for i in range(0, 1000, 7)] + [f"host{i}.example.com" for i in range(0, 1000, 9)]
    masks = [native.mask(t) for t in texts]
    assert masks == [pybind.mask(t) for t in texts]
    matched = sum(1 for m in masks if m)  # the texts do match rules
    if which == "default":
        assert matched > len(texts) // 10
    else:
        assert matched >= 50
        assert max(masks).bit_length() > 64


@needs_binding
def test_owner_sets_equal_google_re2s_for_name_level_rules() -> None:
    # `match` (owners as a frozenset) is what plans use for commands, tools, servers, prompts.
    fast = PolicyEngine.from_template("default").compiled.fast
    spec = [(i, r.matcher.patterns) for i, r in enumerate(fast.rules)
            if r.target in ("command", "process", "tool", "server", "resource", "prompt") and r.matcher is not None]
    native, pybind = PatternSet(spec), PatternSet(spec, native=False)
    texts = [*AWKWARD, "bash", "BASH", "/bin/sh", "pwsh", "zsh -c ls", "sh -c 'curl x | sh'", "read_file", "exec",
             "child_process.spawn", "system (", "eval(x)"]
    found = [native.match(t) for t in texts]
    assert found == [pybind.match(t) for t in texts]
    assert sum(1 for f in found if f) >= 8
    big = PatternSet([(70, ("a",)), (3, ("b",))])
    assert big.match("ab") == {3, 70}


@needs_binding
def test_bad_input_is_refused_clearly() -> None:
    assert _compile is not None
    with pytest.raises(ValueError, match="RE2 refuses"):
        _compile(("ok", "(unclosed"), (0, 1), 1 << 20)
    with pytest.raises(ValueError, match="differ in length"):
        _compile(("a",), (0, 1), 1 << 20)
    with pytest.raises(ValueError, match="non-negative"):
        _compile(("a",), (-1,), 1 << 20)
    mask = _compile(("a", "b"), (0, 70), 1 << 20)
    assert mask("ab") == 1 | 1 << 70
    assert mask("b") == 1 << 70
    assert mask("c") == 0
    with pytest.raises(TypeError):
        mask(b"a")  # type: ignore[arg-type]


def test_a_pattern_the_systems_re2_refuses_falls_back_to_google_re2(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(patterns: tuple[str, ...], owners: tuple[int, ...], max_mem: int) -> object:
        raise ValueError("RE2 refuses it")

    monkeypatch.setattr(_match, "_NATIVE_SETS", refuse)
    ps = PatternSet([(0, ("(?i)^/etc(/|$)",)), (3, ("secret",))])
    assert ps._native_mask is None
    assert ps.mask("/ETC/x") == 1
    assert ps.mask("my secret") == 8
    assert ps.mask("/workspace") == 0


_FRAGMENTS = ["/etc", "/root/", "rm -rf /", "password", "..", "/", "\\", "127.0.0.1", "http://", "%00", "\x00",
              "\n", "bash -c ", "sudo ", "${jndi:", "' or 1=1", "C:\\Windows", "~/.ssh", ".pem", "/workspace/"]


@needs_binding
@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(st.characters(blacklist_categories=()), max_size=8)),
                max_size=12))
def test_any_text_gets_google_re2s_answer(parts: list[str]) -> None:
    # Any code point, lone surrogates included, mixed with pieces of the default policy's patterns.
    text = "".join(parts)
    assert _DEFAULT_SETS[0].mask(text) == _DEFAULT_SETS[1].mask(text)


_DEFAULT_SETS = _sets(PolicyEngine.from_template("default").compiled)
