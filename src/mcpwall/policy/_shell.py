"""Command lines as the shell will run them.

A rule written for `rm -rf /` must also see `r\\m -rf /`, `'rm' -rf /`,
`"r"m -rf /`, `$'\\x72m' -rf /`, `{rm,-rf,/}` and `rm${IFS}-rf${IFS}/`: the
shell removes quotes and escapes and expands these before the program runs.
`command_texts` splits a text the way a POSIX shell does (quote and escape
removal with `shlex` semantics, plus bash's `$'...'` quoting, unquoted
`$IFS` and comma brace expansion) into the simple commands of its lists and
pipelines (`;`, `&`, `&&`, `||`, `|`, newlines, `(...)`, and the commands of
`$(...)`, `<(...)` and backticks, inside double quotes too), and returns each
command's words joined by single spaces. A command whose program is given by
a path (`/usr/bin/rm`, `./x/rm`) is returned a second time with the program's
basename, and one behind a wrapper (`command`, `builtin`, `exec`, `env`,
`nohup`, `nice`, `time`, `\\`) or variable assignments a third time, from
the program on.

These texts are additional spellings for the restrictive rules (`_facts.py`
adds them to a value's variants): the raw text is always matched too, and an
allow rule never sees them. Nothing is executed or expanded beyond the
above: a variable's value or a substitution's output is not known here.
"""

from __future__ import annotations

import re

from mcpwall.policy._shell_expand import expand, may_expand

#: A text without any of these is split by whitespace only, and that is matched already.
_SHELLISH = re.compile(r"[\"'\\;|&\n`$(){}]|(?:^|\s)\S*/\S*\s|(?<!:)//|/\.|^\s|^[A-Za-z_][A-Za-z0-9_]*="
                       r"|(?:^|\s)(?:command|builtin|exec|nohup|time|env|nice|stdbuf|timeout|setsid|xargs)\s")
# `_SHELLISH` as one regex cost 3.3 us on a 29-character text (its `(?:^|\s)...` alternatives are
# tried at every blank); `_shellish` asks the same with a character class and substring tests.
_SHELL_CHARS = re.compile(r"[\"'\\;|&\n`$(){}]")
_DOUBLE_SLASH = re.compile(r"(?<!:)//")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "env", "nice", "stdbuf", "timeout", "setsid",
                       "xargs"})


def _blank_after(text: str, i: int) -> bool:
    """`_SHELLISH`'s path-word alternative for the `/` at `i`: a blank somewhere after it (its
    leading `(?:^|\\s)\\S*` always holds, and the regex's backtracking cost ~1 us a text)."""
    return text[-1].isspace() or len(text[i:].split(None, 1)) == 2


def _shellish(text: str) -> bool:
    """Whether `_SHELLISH` matches `text` (a test keeps the two equal)."""
    if _SHELL_CHARS.search(text) is not None or text[:1].isspace():
        return True
    slash = text.find("/")
    if slash >= 0 and ("/." in text or _blank_after(text, slash)
                       or ("//" in text and _DOUBLE_SLASH.search(text) is not None)):
        return True
    if "=" in text and _ASSIGNMENT.match(text) is not None:
        return True
    words = text.split()
    if not text[-1:].isspace():
        words = words[:-1]
    return not _WRAPPERS.isdisjoint(words)


_SEPARATORS = frozenset(";&|\n()")
#: The characters `_Lexer.run` does more with than add to the current word (blanks aside).
_LEXED = re.compile(r"[\\'\"$`<>;&|\n()]")
_BLANK_RUN = re.compile(r"[ \t\r\f\v]+")
_BLANKS = frozenset(" \t\r\f\v")
#: Longest text split; longer ones (files' contents) are matched as written only.
MAX_COMMAND_TEXT = 64 * 1024
#: Most simple commands taken from one text, and deepest nesting of substitutions.
MAX_COMMANDS = 256
_MAX_NESTING = 8
#: Programs that run their `-c` argument (or their input) as a script.
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
#: A word that `_join` quotes: it would otherwise read as several words or as an operator.
_NEEDS_QUOTES = re.compile(r"[\s;&|<>()]")
_WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "env", "nice", "stdbuf", "timeout",
                       "setsid", "chronic", "unbuffer", "xargs"})
_WRAPPER_VALUE = re.compile(r"-?[0-9]+(\.[0-9]+)?[smhd]?|[A-Z]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_HEX = re.compile(r"[0-9a-fA-F]+")
_OCTAL = re.compile(r"[0-7]{1,3}")
_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b",
           "E": "\x1b", "\\": "\\", "'": "'", '"': '"', "?": "?"}


class _Lexer:
    """One pass over a command text: words of the current command, finished commands."""

    __slots__ = ("commands", "depth", "lines", "subs", "text")

    def __init__(self, text: str, depth: int, commands: list[list[str]], lines: list[str],
                 subs: dict[str, str] | None = None) -> None:
        self.text = text
        self.depth = depth
        self.commands = commands
        #: Whole lines of the scripts that `sh -c` runs (the top-level line is `run`'s result).
        self.lines = lines
        #: Each command substitution as a word shows it (`$(echo x | base64 -d)`) -> its source text.
        self.subs: dict[str, str] = {} if subs is None else subs

    def run(self, start: int = 0, close: str = "") -> tuple[int, list[str]]:
        """Lex from `start` until `close` (unquoted) or the end.

        Returns the index after it and the whole line as tokens (words, operators, substitutions
        as `$(...)`), so that patterns across commands (`curl x | sh`) see it normalised too.
        """
        text = self.text
        n = len(text)
        line: list[str] = []
        words: list[str] = []
        word: list[str] = []
        has_word = False
        quoted = False
        i = start
        while i < n:
            c = text[i]
            if close and c == close[0] and text.startswith(close, i):
                i += len(close)
                break
            if c == "\\":
                if i + 1 < n and text[i + 1] != "\n":
                    word.append(text[i + 1])
                    has_word = True
                i += 2
            elif c == "'":
                end = text.find("'", i + 1)
                end = n if end == -1 else end
                word.append(text[i + 1:end])
                has_word = quoted = True
                i = end + 1
            elif c == '"':
                i = self._double(i + 1, word)
                has_word = quoted = True
            elif c == "$" and text.startswith("$'", i):
                i = self._ansi_c(i + 2, word)
                has_word = quoted = True
            elif c == "$" and text.startswith("$(", i) and not text.startswith("$((", i):
                i = self._nested(i + 2, ")", word)
                has_word = True
            elif c in "<>" and text.startswith("(", i + 1):
                has_word = self._end_word(words, line, word, has_word, quoted)
                word, quoted = [], False
                i = self._nested(i + 2, ")", word, c)
                has_word = True
            elif c == "`":
                i = self._nested(i + 1, "`", word)
                has_word = True
            elif c == "$" and (text.startswith("$IFS", i) or text.startswith("${IFS}", i)):
                # Unquoted, $IFS expands to the field separators: `rm${IFS}-rf${IFS}/` is `rm -rf /`.
                has_word = self._end_word(words, line, word, has_word, quoted)
                word, quoted = [], False
                i += 4 if text.startswith("$IFS", i) else 6
            elif c in _BLANKS:
                has_word = self._end_word(words, line, word, has_word, quoted)
                word, quoted = [], False
                i += 1
            elif c in _SEPARATORS:
                has_word = self._end_word(words, line, word, has_word, quoted)
                word, quoted = [], False
                self._end_command(words)
                words = []
                op = c
                if c in "&|;" and i + 1 < n and text[i + 1] in ("|&" if c == "|" else c):
                    op = text[i:i + 2]  # && || |& ;;
                i += len(op)
                if c == "(":  # a subshell `( ... )`: its commands are commands too
                    if self.depth >= _MAX_NESTING:
                        i = n
                        continue
                    i, inner = _Lexer(text, self.depth + 1, self.commands, self.lines, self.subs).run(i, ")")
                    line += ["(", *inner, ")"]
                elif op != "\n":
                    line.append(op)
                else:
                    line.append(";")
            else:
                word.append(c)
                has_word = True
                i += 1
        self._end_word(words, line, word, has_word, quoted)
        self._end_command(words)
        return i, line

    def _double(self, i: int, word: list[str]) -> int:
        """Inside `"..."`: backslash escapes only `$`, backquote, `"`, `\\` and newline; substitutions run."""
        text = self.text
        n = len(text)
        while i < n:
            c = text[i]
            if c == '"':
                return i + 1
            if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
                if text[i + 1] != "\n":
                    word.append(text[i + 1])
                i += 2
            elif c == "$" and text.startswith("$(", i) and not text.startswith("$((", i):
                i = self._nested(i + 2, ")", word)
            elif c == "`":
                i = self._nested(i + 1, "`", word)
            else:
                word.append(c)
                i += 1
        return n

    def _ansi_c(self, i: int, word: list[str]) -> int:
        """bash's `$'...'`: backslash escapes decoded (`\\x72`, `\\162`, `\\u0072`, `\\n`, ...)."""
        text = self.text
        n = len(text)
        while i < n:
            c = text[i]
            if c == "'":
                return i + 1
            if c != "\\" or i + 1 >= n:
                word.append(c)
                i += 1
                continue
            e = text[i + 1]
            i += 2
            if e in _ANSI_C:
                word.append(_ANSI_C[e])
            elif e in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[e]
                m = _HEX.match(text, i, i + width)
                if m is None:
                    word.append("\\" + e)
                else:
                    word.append(chr(min(int(m.group(), 16), 0x10FFFF)))
                    i = m.end()
            elif e in "01234567":
                m = _OCTAL.match(text[i - 1:i + 2])
                assert m is not None
                word.append(chr(int(m.group(), 8) & 0xFF))
                i += m.end() - 1
            elif e == "c" and i < n:
                word.append(chr(ord(text[i]) & 0x1F))
                i += 1
            else:
                word.append("\\" + e)
        return n

    def _nested(self, i: int, close: str, word: list[str], kind: str = "$") -> int:
        """A substitution: its commands run, so they are commands of their own; the word shows it as `$(...)`."""
        if self.depth >= _MAX_NESTING:
            return len(self.text)
        end, inner = _Lexer(self.text, self.depth + 1, self.commands, self.lines, self.subs).run(i, close)
        rendered = f"{kind}({' '.join(inner)})"
        if kind in "$<":
            closed = self.text.startswith(close, end - len(close)) and end - len(close) >= i
            self.subs.setdefault(rendered, self.text[i:end - len(close)] if closed else self.text[i:end])
        word.append(rendered)
        return end

    def _end_word(self, words: list[str], line: list[str], word: list[str], has_word: bool, quoted: bool) -> bool:
        if has_word:
            text = "".join(word)
            if not quoted and len(text) > 2 and text[0] == "{" and text[-1] == "}" and "," in text \
                    and "{" not in text[1:-1]:
                parts = [p for p in text[1:-1].split(",") if p]  # `{rm,-rf,/}` is `rm -rf /`
            elif text[:1] == "/" and len(text) > 1 and _UNTIDY_PATH.search(text):
                parts = [_tidy_path(text)]  # `rm -rf //` and `rm -rf /tmp/../` remove `/`
            else:
                parts = [text]
            words += parts
            line += [_join(parts)] if len(parts) == 1 else parts
        return False

    def _end_command(self, words: list[str]) -> None:
        if not words or len(self.commands) >= MAX_COMMANDS:
            return
        self.commands.append(words)
        start = _program_start(words)
        if start < len(words) and words[start].rpartition("/")[2] in SHELLS and self.depth < _MAX_NESTING:
            # `bash -c 'r''m -rf /'`: the shell runs its -c argument as a script
            for j in range(start + 1, len(words) - 1):
                flag = words[j]
                if flag[:1] != "-" or flag == "--":
                    break
                if "c" in flag[1:] and flag[1:2] != "-":
                    if words[j + 1].lstrip()[:1] in ("|", "&", ";", ")"):
                        break  # a syntax error: the shell runs nothing of it
                    _, inner = _Lexer(words[j + 1], self.depth + 1, self.commands, self.lines, self.subs).run()
                    self.lines.append(" ".join(inner))
                    break


#: A path word that the program would read otherwise: `//`, `/./`, `/../`, a trailing slash.
_UNTIDY_PATH = re.compile(r"//|/\.\.?(/|$)|./$")


def _tidy_path(path: str) -> str:
    """`path` as the program opens it: `.`/`..` resolved, separators folded, no trailing slash."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


#: A program given by a path (`/usr/bin/rm`, `./bin/rm`), not a substitution or a URL.
_PROGRAM_PATH = re.compile(r"(?![a-zA-Z][a-zA-Z0-9+.-]*://)[^\s()$`]*/[^\s/()$`]+/*")
#: The same where a command starts in a whole line (`a | /bin/sh`), for its basename spelling.
_LINE_PROGRAM = re.compile(r"(^|[;&|(]\s*|\$\(\s*)(?![a-zA-Z][a-zA-Z0-9+.-]*://)[^\s;&|()$`'\"]*/([^\s/;&|()$`'\"]+)(?=\s|$)")


def program_start(words: list[str]) -> int:
    """Index of the program's word, after variable assignments and wrappers (`env -i`, `nice -n`)."""
    return _program_start(words)


def _program_start(words: list[str]) -> int:
    """Index of the program's word, after variable assignments and wrappers (`env -i`, `nice -n`)."""
    start = 0
    wrapped = False
    while start < len(words):
        word = words[start]
        if _ASSIGNMENT.match(word) or (wrapped and word.startswith("-")):
            start += 1
        elif word.rpartition("/")[2] in _WRAPPERS:
            wrapped = True
            start += 1
        elif wrapped and _WRAPPER_VALUE.fullmatch(word) and (words[start - 1] in ("-n", "-s", "-k")
                                                             or words[start - 1].rpartition("/")[2] == "timeout"):
            start += 1  # nice -n 5, timeout 5, timeout -s 9 10
        else:
            break
    return start


def _join(words: list[str]) -> str:
    """Words as one command line, quoting a word that holds blanks or operators (as `shlex.join` would)."""
    return " ".join(f"'{w}'" if _NEEDS_QUOTES.search(w) and w[1:2] != "(" else w for w in words)


def _program_forms(words: list[str]) -> list[list[str]]:
    """The command from its program on (after assignments and wrappers), and with the program's basename."""
    out: list[list[str]] = []
    start = _program_start(words)
    if 0 < start < len(words):
        out.append(words[start:])
    if start < len(words) and _PROGRAM_PATH.fullmatch(words[start]):
        base = words[start].rstrip("/").rpartition("/")[2]
        if base:
            out.append([base, *words[start + 1:]])
    return out


def command_texts(text: str) -> tuple[str, ...]:
    """Each simple command of `text` as the shell runs it, words joined by spaces (see the module docstring).

    Texts equal to `text` itself are left out; so is everything when the text has no shell syntax
    or is longer than MAX_COMMAND_TEXT. Not cached here: `_spelling.py` keeps the short texts' results.
    """
    if len(text) > MAX_COMMAND_TEXT or _plain_words(text):
        return ()
    return _command_texts(text)


def _plain_words(text: str) -> bool:
    """ASCII letters and digits in words one blank apart, the first not a wrapper: the shell runs the text
    as written, so `_command_texts` finds nothing new (a test keeps the two equal). Asked before the
    prefilter, which costs about three times as much on such a text (most message and content texts)."""
    return (text.isascii() and text.replace(" ", "").isalnum() and text[0] != " " and text[-1] != " "
            and "  " not in text and text.partition(" ")[0] not in _WRAPPERS)


def simple_commands(text: str) -> list[list[str]]:
    """The words of each simple command of `text`, as the shell runs them (`_calls.py` reads what each
    command touches from them). Redirections stay in the words (`>`, `>>f`); a text with no shell syntax
    is one command, its words split at blanks."""
    if len(text) > MAX_COMMAND_TEXT or text.lstrip()[:1] in ("|", "&", ";", ")"):
        return []  # a shell runs nothing of a text that starts with an operator (a syntax error): a table row
    if _LEXED.search(text) is None and "{" not in text and "$" not in text:
        words = text.split()
        if not any(w.rpartition("/")[2] in SHELLS for w in words):  # `bash -c x`: its script is a command too
            return [words] if words else []
    commands: list[list[str]] = []
    lexer = _Lexer(text, 0, commands, [])
    lexer.run()
    if may_expand(text):
        commands += expand(commands, lexer.subs, _relex, _program_start)[0]
    return commands


def _relex(text: str) -> tuple[list[list[str]], list[str], dict[str, str]]:
    """`text`'s simple commands, its whole lines (its own and its `sh -c` scripts') and substitutions, for
    `_shell_expand` (the text an expansion gives)."""
    commands: list[list[str]] = []
    lines: list[str] = []
    lexer = _Lexer(text, 1, commands, lines)
    _, line = lexer.run()
    return commands, [" ".join(line), *lines], lexer.subs


def _command_texts(text: str) -> tuple[str, ...]:
    if not _shellish(text):
        return ()
    commands: list[list[str]] = []
    lines: list[str] = []
    lexer = _Lexer(text, 0, commands, lines)
    if _LEXED.search(text) is None:
        # No character the lexer treats specially: its pass is a split at blanks, one command, each
        # word ended as it would end it (braces, untidy paths). A regex split does that pass in C; the
        # character loop cost ~3 us a call in bench/policy_eval.py's stream.
        line: list[str] = []
        words: list[str] = []
        for word in _BLANK_RUN.split(text):
            if word:
                lexer._end_word(words, line, [word], True, False)
        lexer._end_command(words)
    else:
        _, line = lexer.run()
    if may_expand(text):
        # what the line's variables, aliases, eval and computable substitutions stand for (`_shell_expand`)
        expanded, scripts = expand(commands, lexer.subs, _relex, _program_start)
        commands += expanded
        lines += scripts
    joined = " ".join(line)
    seen: dict[str, None] = {joined: None}
    if "/" in joined:
        seen.setdefault(_LINE_PROGRAM.sub(r"\1\2", joined), None)  # `a | /bin/sh` as `a | sh`
    for script in lines:
        seen.setdefault(script, None)
    for words in commands:
        seen.setdefault(_join(words), None)
        for form in _program_forms(words):
            seen.setdefault(_join(form), None)
    seen.pop(text, None)
    seen.pop("", None)
    return tuple(seen)


__all__ = ["MAX_COMMAND_TEXT", "SHELLS", "command_texts", "program_start", "simple_commands"]
