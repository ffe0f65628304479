"""`spell`'s quick answer for plain words is the full reading's, and its cache keeps what is asked again.

Strategy: `_spelling.spell` answers a text of plain words (`_spelling.quiet`) without asking `forms`,
`command_texts` and `text_facts` (bench/policy_eval.py's speed, issue 25); `spell_full` asks them all.
Any difference between the two is a spelling a restrictive rule would not see or a fact (a seed
phrase, a token) that would be lost or invented. They are compared on every string constant of the
security and policy tests (thousands of attack spellings and benign twins), on every string of the
efficacy cases (../shared/efficacy/dev.jsonl, when present), on the benchmark's call stream and on
generated texts built from the same words with the shapes around the screen's edges (15 and 16
characters, wrappers, armour, JWT openings, seed words, other blanks and separators), under every key
class. Then decisions: the default policy decides the efficacy cases and the security tests' texts
alike whichever reading spelled them. Last, the two-generation cache (`SpellCache`): a text asked
again before CACHE_SIZE others stays, the cache never holds more than two generations, and what it
returns is what `spell` says.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwall.policy import Call, Context, PolicyEngine, _calls, _spelling, evaluate, prepare
from mcpwall.policy._calls import KEY_CODE, KEY_COMMAND, KEY_HOST, KEY_NO_FACTS, KEY_PLAIN, KEY_URL, SECRETS
from mcpwall.policy._shell import _WRAPPERS
from mcpwall.security._bip39 import WORDS as BIP39

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "efficacy" / "dev.jsonl"
KINDS = (KEY_PLAIN, KEY_NO_FACTS, KEY_HOST, KEY_COMMAND, KEY_URL, KEY_CODE)
HOME = "/home/dev"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _efficacy_cases() -> list[dict[str, Any]]:
    if not DEV.is_file():
        return []
    return [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]


def _corpus() -> list[str]:
    texts: set[str] = set()
    for folder in ("security", "policy"):
        for path in sorted((ROOT / "tests" / folder).glob("test_*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 8192:
                    texts.add(node.value)
    for case in _efficacy_cases():
        texts.update(_strings(case.get("payload")))
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from policy_eval import call_stream
    finally:
        sys.path.remove(str(ROOT / "bench"))
    for call in call_stream(3000, random.Random(3)):
        texts.update(_strings(dict(call.arguments)))
    return sorted(texts)


CORPUS = _corpus()
#: The words of every corpus text, for the generated ones: a word any test or case cares about is drawn.
VOCABULARY = sorted({w for t in CORPUS for w in re.findall(r"[A-Za-z0-9]+", t) if len(w) <= 20})
EDGE_WORDS = [
    "a" * 15, "a" * 16, "Z9" * 8, "AKIAIOSFODNN7EXAMPLE", "BEGIN", "xBEGINx", "eyJhbGciOi", "eyJ", "ey", "J",
    "abandon", "ability", "zoo", "wrong", "1", "12", *sorted(_WRAPPERS), "bash", "sh", "sudo", "rm", "id", "whoami",
]


def test_the_corpus_is_large_and_the_quick_answer_is_taken_for_most_plain_texts() -> None:
    assert len(CORPUS) > 3000
    quiet = [t for t in CORPUS if _spelling.quiet(t)]
    assert len(quiet) > 200  # the screen answers many texts (else it would be dead weight)
    assert _spelling.quiet("deploy the build to staging now")
    assert _spelling.quiet("42")


@pytest.mark.parametrize("kind", KINDS)
def test_spell_is_spell_full_on_every_test_and_case_text(kind: int) -> None:
    differ = [(t[:80], _spelling.spell(t, HOME, kind), _spelling.spell_full(t, HOME, kind)) for t in CORPUS
              if _spelling.spell(t, HOME, kind) != _spelling.spell_full(t, HOME, kind)]
    assert not differ, differ[:3]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(VOCABULARY), st.sampled_from(EDGE_WORDS),
                          st.sampled_from(sorted(BIP39)), st.text("aZ09", min_size=14, max_size=17)),
                min_size=1, max_size=26),
       st.lists(st.sampled_from([" "] * 12 + ["  ", ",", ", ", "\n", "\t", "", "=", ":", "-", "."]),
                min_size=26, max_size=26),
       st.sampled_from(["", " ", "\t"]), st.sampled_from([KEY_PLAIN, KEY_NO_FACTS, KEY_COMMAND]))
def test_spell_is_spell_full_on_generated_texts(words: list[str], blanks: list[str], edge: str, kind: int) -> None:
    text = "".join(w + b for w, b in zip(words, blanks, strict=False))
    text = (edge + text[:-len(blanks[len(words) - 1])] if blanks[len(words) - 1] else edge + text)
    assert _spelling.spell(text, HOME, kind) == _spelling.spell_full(text, HOME, kind), repr(text)


def test_a_quiet_text_is_one_the_call_facts_screen_finds_nothing_in() -> None:
    # `_calls._QUIET` is the shapes the readers act on: a text `quiet` answers must be one it lets by.
    for text in CORPUS:
        if _spelling.quiet(text):
            assert _calls._QUIET.search(text) is None, repr(text)


@pytest.mark.parametrize("text", [
    "AKIAIOSFODNN7EXAMPLE is the key", "aaaaaaaaaaaaaaaa", "BEGIN OPENSSH PRIVATE KEY", "eyJhbGciOiJIUzI1NiJ9 x",
    "nohup rm", "time make", "env", " leading", "trailing ", "two  blanks", "tab\there", "line\nbreak",
    "caf\u00e9", "a,b", "",
])
def test_tokens_armour_wrappers_and_other_blanks_are_read_in_full(text: str) -> None:
    assert not _spelling.quiet(text)


def test_a_seed_phrase_in_plain_words_is_still_a_secret_going_out() -> None:
    seed = "abandon ability able about above absent absorb abstract absurd abuse access accident"
    assert _spelling.quiet(seed)
    assert _spelling.spell(seed, HOME, KEY_PLAIN).facts == ((SECRETS, "seed-phrase"),)
    decision = evaluate(PolicyEngine.from_template("default").compiled,
                        prepare(Call(name="send_message", arguments={"text": seed})), _ctx())
    assert decision.action == "deny"
    assert "block-secrets-out" in decision.rule_ids


def _ctx() -> Context:
    return Context(now=datetime(2026, 12, 2, 3, 0).astimezone(), requests_last_minute=1)


#: Decisions of the default policy on the efficacy cases' calls and on the corpus texts sent as a message,
#: printed as JSON, with `spell` as it is or replaced by `spell_full` (as Python: compiled code calls
#: `spell` directly, where the Python `SpellCache.recall` finds the module's name).
_DECIDE = """
import json, sys
from datetime import datetime
from mcpwall.policy import Call, Context, PolicyEngine, evaluate, prepare
from mcpwall.policy import _spelling
if sys.argv[1] == "full":
    _spelling.spell = _spelling.spell_full
cases, texts = json.load(sys.stdin)
ctx = Context(now=datetime(2026, 12, 2, 3, 0).astimezone(), requests_last_minute=1)
policy = PolicyEngine.from_template("default").compiled
calls = [Call(name=p.get("tool", ""), arguments=p.get("arguments") or {}, server=p.get("server", "")) for p in cases]
calls += [Call(name=n, arguments={"text": t, "items": [t, "x"]}) for t in texts for n in ("send_message", "echo")]
out = []
for call in calls:
    facts = prepare(call, resolve_symlinks=False, resolve_hosts=False)  # the machine's answers aside
    d = evaluate(policy, facts, ctx)
    out.append([d.action, list(d.rule_ids), [list(f) for f in facts.derived], [list(v) for v in facts.values]])
print(json.dumps(out))
"""


def test_the_efficacy_cases_and_test_texts_are_decided_alike_with_either_reading() -> None:
    cases = [c["payload"] for c in _efficacy_cases() if c.get("kind") == "call" and isinstance(c.get("payload"), dict)]
    texts = [t for t in CORPUS if len(t) < 2048]
    stdin = json.dumps([cases, texts])
    env = {**os.environ, "MCPWALL_PURE": "1"}
    runs = [subprocess.run([sys.executable, "-c", _DECIDE, how], input=stdin, env=env, capture_output=True,
                           text=True, timeout=600, check=True).stdout for how in ("quick", "full")]
    quick, full = (json.loads(r) for r in runs)
    assert len(quick) == len(cases) + 2 * len(texts)
    assert quick == full
    assert {"ask", "deny"} <= {d[0] for d in quick}
    assert sum(1 for d in quick if d[2]) > 500  # many calls have facts (secrets, sinks, files) to agree on


def test_a_text_asked_again_stays_while_texts_seen_once_come_and_go() -> None:
    cache = _spelling.SpellCache(HOME, KEY_PLAIN)
    size = _spelling.CACHE_SIZE
    hot = "/workspace/src/app.py"
    assert cache.recall(hot) == _spelling.spell(hot, HOME, KEY_PLAIN)
    for i in range(5 * size):
        text = f"message number {i}"
        assert cache.new.get(text) is None
        assert cache.old.get(text) is None
        assert cache.recall(text) is _spelling.PLAIN  # its only spelling: kept as nothing of its own
        if i % (size // 2) == 0:  # asked again now and then, as a session's paths are
            found = cache.new.get(hot) or cache.recall(hot)
            assert found == _spelling.spell(hot, HOME, KEY_PLAIN)
        assert len(cache.new) <= size
        assert len(cache.old) <= size
    assert hot in cache.new or hot in cache.old


def test_a_text_seen_once_is_forgotten_after_two_generations_and_long_texts_are_not_kept() -> None:
    cache = _spelling.SpellCache(HOME, KEY_PLAIN)
    cache.recall("once only")
    for i in range(2 * _spelling.CACHE_SIZE + 1):
        cache.recall(f"filler {i}")
    assert "once only" not in cache.new
    assert "once only" not in cache.old
    long_text = "x " * _spelling.CACHED_TEXT
    assert cache.recall(long_text) == _spelling.spell(long_text, HOME, KEY_PLAIN)
    assert long_text not in cache.new
    assert long_text not in cache.old
