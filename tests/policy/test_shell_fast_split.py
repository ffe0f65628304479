"""The blank-split path of `command_texts` gives what the character lexer gives.

Strategy: texts with none of the characters the lexer treats specially (quotes, escapes,
`$`, backquotes, redirections, separators, newlines) are split at blanks without the
character loop (bench/policy_eval.py: ~3 us a call); hypothesis draws such texts (braces,
commas, untidy paths, wrappers, variable assignments, shells with -c, odd Unicode spaces)
and compares both paths' commands and line.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwall.policy import _shell

WORDS = ["rm", "-rf", "/", "//", "/tmp/../", "{rm,-rf,/}", "env", "VAR=1", "sh", "-c", "ls", "/bin/rm", "nohup",
         "a,b", "{x}", "~", "*.o", "find", "-delete", "x\u00a0y", "./x/rm", "command", "bash", "-lc"]


def _both(text: str) -> tuple[tuple[list[list[str]], list[str]], tuple[list[list[str]], list[str]]]:
    slow_commands: list[list[str]] = []
    slow_lines: list[str] = []
    _, slow_line = _shell._Lexer(text, 0, slow_commands, slow_lines).run()
    assert _shell._LEXED.search(text) is None
    fast_commands: list[list[str]] = []
    fast_lines: list[str] = []
    lexer = _shell._Lexer(text, 0, fast_commands, fast_lines)
    words: list[str] = []
    fast_line: list[str] = []
    for word in _shell._BLANK_RUN.split(text):
        if word:
            lexer._end_word(words, fast_line, [word], True, False)
    lexer._end_command(words)
    return (slow_commands, slow_line), (fast_commands, fast_line)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
       st.lists(st.sampled_from([" ", "  ", "\t", " \r ", "\f", "\v"]), min_size=8, max_size=8), st.booleans())
def test_a_text_without_shell_syntax_splits_the_same_both_ways(words: list[str], blanks: list[str],
                                                                lead: bool) -> None:
    text = (" " if lead else "") + "".join(w + b for w, b in zip(words, blanks, strict=False))
    slow, fast = _both(text)
    assert fast == slow


def test_the_command_texts_of_plain_commands_are_unchanged_by_the_fast_path() -> None:
    assert "rm -rf /" in _shell.command_texts("/bin/rm -rf //")
    assert "rm -rf /" in _shell.command_texts("env VAR=1 rm -rf /tmp/../")
    assert "rm -rf / x" in _shell.command_texts("{rm,-rf,/}  x")


TOKENS = [*"ab/.:= \t\n\r\x0b\x0c\u00a0\u2003;|&$`'\"\\(){}_9", "command ", "env ", " xargs", "nohup\t",
          "timeout\u2003", "time", "A=", "://", "//", "/.", "x/y "]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=12))
def test_the_cheap_shell_prefilter_answers_as_the_regex_does(tokens: list[str]) -> None:
    text = "".join(tokens)
    assert _shell._shellish(text) == (_shell._SHELLISH.search(text) is not None), repr(text)
