"""What a command line runs once the shell has expanded what the line itself defines.

`_shell` splits a text into simple commands as written; a program can also hide behind a name the
same line gives it: `W=whoami; $W`, `a=who; b=ami; $a$b`, `${X:-whoami}`, `alias x=whoami; x`,
`F=/etc/shadow; cat $F`, `env X=/etc/shadow sh -c 'cat $X'`, `eval "$X"`, `bash <<< 'id'`, or the
output of a substitution whose input is in the text: `$(echo d2hvYW1p | base64 -d)`,
`` `printf '\\x77hoami'` ``, `sh -c "$(printf 'cat /etc/passwd')"`, `$(rev <<< imaohw)`.

`expand` follows the line in order, keeps the variables and aliases it assigns (`X=`, `export`,
`declare`, `local`, `readonly`, `printf -v`, `alias`; a `VAR=x cmd` prefix too, for the commands
after it: more than the shell does, which errs on the side of seeing a command), and returns each
command that an expansion changed, as the shell would then run it, with its own commands (an
`eval`'s script, a value that is a command line). A substitution's output is computed only when it
is a pipeline of `echo`/`printf` (or a here-string) through the decoders an obfuscator uses
(`base64 -d`, `base32 -d`, `xxd -r -p`, `rev`, `tr`, `cat`); anything else is unknown, and the
text is matched as written, as before. Nothing is executed. The results are more spellings for the
restrictive rules and more commands for the facts (`_calls_shell`), never fewer.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

#: `relex(text)`: the simple commands of `text`, the whole lines it holds, and its substitutions' sources.
Relex = Callable[[str], tuple[list[list[str]], list[str], dict[str, str]]]

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)", re.S)
_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*|\d)(?:(:?[-=+?])([^}]*)|:(-?\d+)(?::(\d+))?)?\}"
                  r"|([A-Za-z_][A-Za-z0-9_]*|\d))")
#: Variables that start with `/` wherever a shell runs (`${PATH:0:1}` is a slash that spells no slash).
_SLASHED = frozenset({"HOME", "PATH", "PWD", "OLDPWD", "SHELL", "TMPDIR"})
_DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"})
#: Programs that assign, alias or run their arguments as a script: read even without a `$`.
_SPECIAL = _DECLARE | _SHELLS | {"alias", "read", "printf", "eval", "set", "source", ".", "{"}
#: A text that nothing here can change: no variable, substitution, alias, eval, here-string or `{ ...; }`.
_SCREEN = re.compile(r"\$|`|\balias\b|\beval\b|<<<|<\(|\{\s")
#: How deep an expansion may lead to another, how many commands one text may expand, how long a value is kept.
_MAX_ROUNDS = 3
_MAX_EXPANSIONS = 64
_MAX_VALUE = 4096
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b", "\\": "\\",
            "'": "'", '"': '"', "0": "\0"}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|0[0-7]{0,3}|[1-7][0-7]{0,2}|.)", re.S)
_FORMAT = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d+)?[sbcdiq])")


def may_expand(text: str) -> bool:
    """Whether `expand` can find anything in `text` (a screen for the common command line)."""
    return _SCREEN.search(text) is not None


def _unescape(text: str, octal_zero: bool = False) -> str:
    """Backslash escapes as `printf` and `echo -e` read them (`\\x77`, `\\167`, `\\u0077`, `\\n`)."""

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU" and len(e) > 1:
            return chr(min(int(e[1:], 16), 0x10FFFF))
        if e[0] in "01234567" and (e[0] != "0" or len(e) > 1 or not octal_zero):
            digits = e[1:] if e[0] == "0" and octal_zero else e
            return chr(int(digits or "0", 8) & 0xFF)
        return _ESCAPES.get(e, "\\" + e)

    return _ESCAPE.sub(one, text)


def _printf(args: list[str]) -> str:
    """What `printf FORMAT ARGS...` prints (its format repeated while arguments are left, as the shell's)."""
    if not args:
        return ""
    fmt, rest = args[0], args[1:]
    out: list[str] = []
    for _ in range(16):
        used = 0
        pos = 0
        for m in _FORMAT.finditer(fmt):
            out.append(_unescape(fmt[pos:m.start()]))
            pos = m.end()
            spec = m.group()
            if spec == "%%":
                out.append("%")
                continue
            value = rest[used] if used < len(rest) else ""
            used += 1
            out.append(_unescape(value, octal_zero=True) if spec[-1] == "b" else value[:1] if spec[-1] == "c" else value)
        out.append(_unescape(fmt[pos:]))
        rest = rest[used:]
        if not rest or not used:
            break
    return "".join(out)


def _echo(args: list[str]) -> str:
    escapes = False
    newline = True
    while args and re.fullmatch(r"-[neE]+", args[0]):
        escapes = "e" in args[0] or (escapes and "E" not in args[0])
        newline = newline and "n" not in args[0]
        args = args[1:]
    text = " ".join(args)
    return (_unescape(text, octal_zero=True) if escapes else text) + ("\n" if newline else "")


def _b64(data: str, alphabet: str) -> str | None:
    compact = "".join(data.split())
    try:
        if alphabet == "32":
            raw = base64.b32decode(compact + "=" * (-len(compact) % 8), casefold=True)
        else:
            raw = base64.b64decode(compact + "=" * (-len(compact) % 4), altchars=b"-_" if "-" in compact
                                   or "_" in compact else None)
        return raw.decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


def _tr_set(spec: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out.extend(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out)


def _filter(words: list[str], data: str) -> str | None:
    """`data` through one decoding stage, or None when the stage is not one this module knows."""
    program, args = words[0].rpartition("/")[2], words[1:]
    flags = "".join(a.lstrip("-") for a in args if a.startswith("-"))
    operands = [a for a in args if not a.startswith("-")]
    if program == "cat" and not operands:
        return data
    if program in ("base64", "base32") and ("d" in flags or "D" in flags or "decode" in flags) and not operands:
        return _b64(data, "32" if program == "base32" else "64")
    if program == "openssl" and operands[:1] in (["base64"], ["enc"]) and "d" in flags:
        return _b64(data, "64")
    if program == "xxd" and "r" in flags and "p" in flags and not operands:
        try:
            return bytes.fromhex("".join(data.split())).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    if program == "rev" and not operands:
        return "\n".join(line[::-1] for line in data.rstrip("\n").split("\n")) + "\n"
    if program == "tr" and not flags and len(operands) == 2:
        src, dst = _tr_set(operands[0]), _tr_set(operands[1])
        if src and dst:
            dst = dst + dst[-1] * (len(src) - len(dst))
            return data.translate(str.maketrans(src, dst[: len(src)]))
    if program == "tr" and flags == "d" and len(operands) == 1:
        return data.translate({ord(c): None for c in _tr_set(operands[0])})
    return None


def _here_string(words: list[str]) -> tuple[list[str], str | None]:
    """The words without a here-string (`<<< x`, `<<<x`), and its text (with the newline the shell adds)."""
    for i, word in enumerate(words):
        if word.startswith("<<<"):
            text = word[3:] if len(word) > 3 else (words[i + 1] if i + 1 < len(words) else "")
            rest = words[:i] + words[i + (1 if len(word) > 3 else 2):]
            return rest, text + "\n"
    return words, None


def static_output(source: str, relex: Relex) -> str | None:
    """What the substitution `$(source)` prints, when its text says so: `echo`/`printf`/a here-string through
    decoders. None for anything else (a command whose output is not in the text)."""
    if any(c in source for c in ";&\n`") or "$(" in source or len(source) > _MAX_VALUE:
        return None
    head = source.lstrip().partition(" ")[0].rpartition("/")[2]
    if head not in ("echo", "printf") and "<<<" not in source:
        return None  # output that comes from elsewhere (`$(date)`, `$(curl ...)`): not known here
    stages, _, _ = relex(source)
    if not stages or len(stages) != source.count("|") + 1:
        return None
    first, data = _here_string(stages[0])
    program = first[0].rpartition("/")[2] if first else ""
    if data is None:
        if program == "echo":
            data = _echo(first[1:])
        elif program == "printf":
            data = _printf(first[1:])
        else:
            return None
        first = []
    for words in ([first] if first else []) + stages[1:]:
        words, here = _here_string(words)
        if not words:
            return None
        out = _filter(words, here if here is not None else data)
        if out is None:
            return None
        data = out
    data = data.rstrip("\n")  # a substitution drops the trailing newlines
    return data if data.isprintable() or all(c.isprintable() or c in "\n\t" for c in data) else None


class _Expander:
    """One pass over a line's commands in order, with the variables and aliases assigned so far."""

    def __init__(self, relex: Relex) -> None:
        self.relex = relex
        self.env: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self.outputs: dict[str, str | None] = {}

    def subst(self, word: str, subs: dict[str, str]) -> str | None:
        """`word` with known variables and computable substitutions replaced, or None when none is."""
        out = word
        if "$(" in out:
            for rendered, source in subs.items():
                if rendered[0] == "$" and rendered in out:
                    if rendered not in self.outputs:
                        self.outputs[rendered] = static_output(source, self.relex)
                    value = self.outputs[rendered]
                    if value is not None:
                        out = out.replace(rendered, value)
        if "$" in out and (self.env or "${" in out):
            out = _REF.sub(self._ref, out)
        return out if out != word else None

    def _ref(self, m: re.Match[str]) -> str:
        name = m.group(1) or m.group(6)
        value = self.env.get(name)
        op, arg = m.group(2), m.group(3)
        if op is not None:
            unset = value is None or (op.startswith(":") and value == "")
            if op.endswith("+"):
                return "" if unset else arg
            if unset:
                if op.endswith("="):
                    self.env[name] = arg
                return arg if not op.endswith("?") else m.group()
            return value or ""
        if value is None:
            if name in _SLASHED and m.group(4) == "0" and m.group(5) == "1":
                return "/"
            return m.group()
        if m.group(4) is not None:
            start = int(m.group(4))
            value = value[start:]
            if m.group(5) is not None:
                value = value[: int(m.group(5))]
        ifs = self.env.get("IFS")
        if ifs and ifs.strip():
            value = value.translate({ord(c): " " for c in ifs if not c.isspace()})
        return value

    def assign(self, word: str, subs: dict[str, str]) -> None:
        m = _ASSIGN.fullmatch(word)
        if m is not None:
            value = self.subst(m.group(2), subs)
            self.env[m.group(1)] = (m.group(2) if value is None else value)[:_MAX_VALUE]

    def _read(self, args: list[str], subs: dict[str, str]) -> None:
        """`read [-r] NAME... <<< text`: the names take the here-string's words (the last one the rest)."""
        args, text = _here_string(args)
        names: list[str] = []
        i = 0
        while i < len(args):
            if args[i] in ("-p", "-d", "-t", "-n", "-N", "-u", "-a", "-i"):
                i += 2
                continue
            if not args[i].startswith("-"):
                names.append(args[i])
            i += 1
        if text is None or not names:
            return
        value = self.subst(text, subs) or text
        fields = value.split(None, len(names) - 1)
        for name, field in zip(names, fields + [""] * (len(names) - len(fields)), strict=True):
            self.env[name] = field.strip()[:_MAX_VALUE]

    def _positional(self, args: list[str]) -> None:
        """`sh -c SCRIPT NAME ARG...`: the script's `$0`, `$1`... are the words after it."""
        for j, flag in enumerate(args[:-1]):
            if flag[:1] != "-" or flag == "--":
                return
            if "c" in flag[1:]:
                for n, word in enumerate(args[j + 2 : j + 12]):
                    self.env[str(n)] = word
                return

    def command(self, words: list[str], start: int, subs: dict[str, str]) -> str | None:
        """The command line `words` stands for once expanded, or None when it is as written."""
        for word in words[:start]:
            self.assign(word, subs)
        if start >= len(words):
            return None
        program = words[start].rpartition("/")[2]
        if (program not in _SPECIAL and words[start] not in self.aliases
                and not any("$" in w for w in words)):
            return None  # most commands: nothing to expand (a screen before the work below)
        args = words[start + 1 :]
        if program in _DECLARE:
            for word in args:
                self.assign(word, subs)
            return None
        if program == "alias":
            for word in args:
                name, eq, value = word.partition("=")
                if eq and name:
                    self.aliases[name] = value
            return None
        if program == "read":
            self._read(args, subs)
            return None
        if program == "set" and args[:1] == ["--"]:
            for n, word in enumerate(args[1:10], 1):  # `set -- whoami; $1`
                self.env[str(n)] = word
            return None
        if words[start] == "{":
            return " ".join(words[start + 1 :]) or None  # `{ whoami; }`, a function's body: its commands
        if program == "printf" and len(args) >= 3 and args[0] == "-v":
            self.env[args[1]] = _printf(args[2:])[:_MAX_VALUE]
            return None
        expanded = [self.subst(w, subs) for w in words]
        new = [w if e is None else e for w, e in zip(words, expanded, strict=True)]
        head = new[start].rpartition("/")[2]
        if words[start] in self.aliases:
            return " ".join([self.aliases[words[start]], *new[start + 1 :]])
        if head == "eval":
            return " ".join(new[start + 1 :]) or None  # eval runs its arguments as a script
        if head in _SHELLS or head in ("source", "."):
            rest, script = _here_string(new[start + 1 :])
            if script is not None and not rest:
                return script.rstrip("\n")  # `bash <<< 'id'`: the shell runs its input
            for word in rest:  # `source <(echo id)`, `bash <(printf id)`: it runs the substitution's output
                if word[:2] == "<(" and word in subs:
                    output = static_output(subs[word], self.relex)
                    if output is not None:
                        return output
            self._positional(rest)
        if all(e is None for e in expanded):
            return None
        return " ".join(new)


def expand(commands: list[list[str]], subs: dict[str, str], relex: Relex,
           program_start: Callable[[list[str]], int]) -> tuple[list[list[str]], list[str]]:
    """The commands that `commands` (one text's, in order) run once their expansions are known, and the
    command lines they come from. Empty when no expansion changes anything."""
    expander = _Expander(relex)
    pending: list[tuple[list[str], int, dict[str, str]]] = [(words, 0, subs) for words in commands]
    extra: list[list[str]] = []
    lines: list[str] = []
    budget = _MAX_EXPANSIONS
    i = 0
    while i < len(pending) and budget > 0:
        words, depth, here = pending[i]
        i += 1
        text = expander.command(words, program_start(words), here)
        if text is None or depth >= _MAX_ROUNDS or not text.strip():
            continue
        budget -= 1
        found, whole, inner = relex(text)
        extra += found
        lines += [line for line in whole if line not in lines]
        # what it expands to runs next, before the rest of the line (`eval "X=id"; $X`)
        pending[i:i] = [(w, depth + 1, inner) for w in found]
    return extra, lines


__all__ = ["Relex", "expand", "may_expand", "static_output"]
