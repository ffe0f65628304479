"""The text-derived part of a leaf is cached by text; the cache answers what the uncached path computes.

Strategy: `_Walker._leaf` keeps, per (home, host key) and text, every spelling the text alone
determines (its forms, its commands as the shell runs them, a host value's spellings) and which
of them name a host or a path; resolved hosts and symlinks are still asked for in each call.
hypothesis draws texts from the pieces the normalisers act on (paths, `..`, `%`-encoding, `~`,
`$HOME`, `file:` and Windows paths, NUL, URLs and bare hosts with ports, shell syntax, wrappers,
odd blanks) under keys that are and are not host keys, and compares a leaf taken twice (a miss,
then a hit) with `reference_leaf`, the leaf as it was computed before the cache (issue 22's
head), with a resolver and a realpath that answer from tables. The plain-words shortcut of
`command_texts` and the cached key kinds are compared with what they stand for the same way.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwall.policy import Call, _facts, _shell, _spelling, prepare
from mcpwall.policy._calls import KEY_COMMAND, KEY_HOST, KEY_PLAIN, KEY_URL, text_facts
from mcpwall.policy._calls_files import spelled_paths
from mcpwall.policy._facts import ArgValue
from mcpwall.policy._host import canonical_host, canonical_ip, host_value, is_host_key
from mcpwall.policy._normalize import forms

ADDRESSES = {"myhost": ("127.0.1.1",), "db.internal": ("10.0.0.5", "fd00::5"), "evil.example": ("169.254.169.254",),
             "public.example": ()}
LINKS = {"/workspace/link": "/etc", "/tmp/l": "/home/u/.ssh", "/workspace/dir/": "/srv/real"}


def resolver(host: str) -> tuple[str, ...] | None:
    return ADDRESSES.get(host, None if host.startswith("slow") else ())


def realpath(path: str) -> str:
    for link, real in LINKS.items():
        if path == link or path.startswith(link.rstrip("/") + "/"):
            return real + path[len(link.rstrip("/")):]
    return path


def reference_leaf(text: str, key: str, home: str | None) -> ArgValue:
    """`_Walker._leaf` before the cache: every step on every call."""
    variants, canonical = forms(text, home)
    shell = _shell._command_texts(text) if len(text) <= _shell.MAX_COMMAND_TEXT else ()
    variants += tuple(t for t in shell if t not in variants)
    host_key = bool(key) and is_host_key(key)
    # issue 25: the files a command line touches are spellings too (`_calls.text_facts`)
    kind = _facts._key_kind(key) if key else 0
    cls = KEY_HOST if host_key else KEY_COMMAND if kind & _facts._COMMAND_BIT else KEY_URL if kind & _facts._URL_BIT \
        else KEY_PLAIN
    variants += tuple(dict.fromkeys(t for t in spelled_paths(text_facts(text, cls)) if t not in variants
                                    and t != text))
    if host_key:
        variants += tuple(h for h in host_value(text) if h not in variants)
    if host_key or "://" in text or ":" in text[:12]:
        extra: list[str] = []
        for v in variants:
            prefix, host, rest = _spelling._url_parts(v)
            if not host:
                b = _spelling._BARE_HOST.fullmatch(v.strip())
                if not host_key or b is None or canonical_ip(b.group(1)) is not None:
                    continue
                prefix, host, rest = "", canonical_host(b.group(1)), b.group(2) or ""
            for address in resolver(host) or ():
                spelled = prefix + (f"[{address}]" if ":" in address else address) + rest
                if spelled not in variants and spelled not in extra:
                    extra.append(spelled)
                    if rest and not prefix and address not in extra:
                        extra.append(address)
        variants += tuple(extra)
    links: list[str] = []
    for v in variants:
        if v.startswith("/") and "\x00" not in v:
            real = realpath(v)
            real += "/" if v.endswith("/") and not real.endswith("/") else ""
            if real != v and real not in variants and real not in links:
                links.append(real)
                canonical = real if v == canonical else canonical
    return ArgValue("p", key, text, variants + tuple(links), canonical)


PIECES = ["/workspace/", "link", "/tmp/l", "dir/", "..", "/", "//", "./", "%2F", "%252e", "~", "~/", "$HOME/",
          "${HOME}", "file://", "localhost", "C:\\", "\\\\srv\\share", ".env.", "\x00", "http://", "https://",
          "HTTP://", "myhost", "MyHost.", "db.internal", "evil.example", "slow.example", "public.example",
          "127.1", "0x7f.1", "[::1]", ":8080", ":5432", "@", "user:pw@", "?q=1", "#f", " ", "  ", "\t", "rm",
          "-rf", "'", '"', "\\", ";", "|", "&&", "$(", ")", "`", "{a,b}", "$IFS", "env ", "nohup ", "bash -c ",
          "VAR=1 ", "/bin/rm ", "*", "=", "ls", "\uff0e", "\u3002", "é"]
KEYS = ["path", "host", "hostName", "url", "serverIp", "message", "", "remote_addr", "command"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8), st.sampled_from(KEYS),
       st.sampled_from(["/home/u", "/root", None]))
def test_a_cached_leaf_is_the_leaf_computed_afresh(pieces: list[str], key: str, home: str | None) -> None:
    text = "".join(pieces)
    expected = reference_leaf(text, key, home)
    walker = _facts._Walker(home, realpath, resolver)
    walker._leaf(text, "p", key)  # computed, or found if an earlier example had the text
    walker._leaf(text, "p", key)  # found
    assert walker.values == [expected, expected], repr(text)


def test_hosts_and_symlinks_are_asked_for_in_each_call_not_cached() -> None:
    answers = {"moving.example": ("10.1.1.1",)}
    links = {"/workspace/moving": "/workspace/moving"}
    walker = _facts._Walker("/home/u", lambda p: links.get(p, p), lambda h: answers.get(h, ()))
    walker._leaf("http://moving.example/x", "p", "url")
    walker._leaf("/workspace/moving", "p", "path")
    answers["moving.example"] = ("127.0.0.1",)
    links["/workspace/moving"] = "/etc/shadow"
    walker._leaf("http://moving.example/x", "p", "url")
    walker._leaf("/workspace/moving", "p", "path")
    first_url, first_path, url, path = walker.values
    assert "http://10.1.1.1/x" in first_url.variants
    assert "http://10.1.1.1/x" not in url.variants
    assert "http://127.0.0.1/x" in url.variants
    assert first_path.canonical == "/workspace/moving"
    assert path.canonical == "/etc/shadow"


WORDS = ["the", "rm", "Build", "x9", "env", "nohup", "time", "timeout", "5", "command", "bash", "sh", "chronic",
         "exec", "KILL", "xargs", "a"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
       st.lists(st.sampled_from([" ", " ", " ", "  "]), min_size=6, max_size=6), st.booleans(), st.booleans())
def test_the_plain_words_shortcut_gives_what_the_lexer_gives(words: list[str], blanks: list[str], lead: bool,
                                                             trail: bool) -> None:
    text = (" " if lead else "") + "".join(w + b for w, b in zip(words, blanks, strict=False))[:-1] \
        + (" " if trail else "")
    assert _shell.command_texts(text) == _shell._command_texts(text), repr(text)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.sampled_from(["Command", "CMD", "args", "ARGV", "Stdin", "input_text", "env", "ENV",
                                  "envVars", "/etc/x", "~/x", "./a", "file:x", "C:\\x", "%2Fetc", "host",
                                  "redis_host", "serverIp", "path", "", "İ", "K"]), st.text(max_size=12)))
def test_a_keys_cached_kind_is_what_the_predicates_say(key: str) -> None:
    lower = key.lower()
    kind = _facts._key_kind(key)
    assert bool(kind & _facts._PATH_KEY_BIT) == bool(_facts._PATH_KEY.match(key))
    assert bool(kind & _facts._ENV_BIT) == (lower in _facts._ENV_KEYS)
    assert bool(kind & _facts._PROGRAM_BIT) == (lower in _facts._PROGRAM_KEYS)
    assert bool(kind & _facts._ARGV_BIT) == (lower in _facts._ARGV_KEYS)
    assert bool(kind & _facts._STDIN_BIT) == (lower in _facts._STDIN_KEYS)
    assert bool(kind & _facts._HOST_BIT) == (bool(key) and is_host_key(key))
    assert _facts._key_kind(key) == kind  # and again, from the cache


def test_program_argv_input_env_and_path_keys_are_read_in_any_case() -> None:
    facts = prepare(Call(arguments={"Command": "bash", "ARGS": ["-x"], "Stdin": "rm -rf /", "ENV": {"LD_PRELOAD": "x"},
                                    "files": {"/etc/cron.d/x": "* * * * * id"}}))
    by_path = {v.path: v for v in facts.values}
    assert by_path["#argv"].raw == "bash -x"
    assert by_path["#stdin"].raw == "bash -x -c 'rm -rf /'"
    assert "rm -rf /" in by_path["#stdin"].variants
    assert facts.env_keys == ("LD_PRELOAD",)
    assert by_path["files./etc/cron.d/x#key"].raw == "/etc/cron.d/x"
