"""The symlink cache (`policy._realpath.CachedRealpath`) answers as `os.path.realpath` does, and never late.

Strategy: `CachedRealpath` resolves a path as its parent's cached real path plus one `lstat` of its last
component (bench/policy_eval.py's speed); `os.path.realpath` walks every component. On a real tree of
files, directories, links to each, relative and absolute links, chains, links up (`..`), dangling
links, loops and names under a file, every generated path (components drawn from the tree's names,
`.`, `..`, empty ones, missing names, a NUL) is resolved by both, through a warm cache and a cold one.
Then time: a link swapped under a cached directory is seen once `ttl` has passed, whichever path
under it is asked first, and the self-protection's rule still holds end to end (a link into a
protected folder is that folder).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpwall.policy import Call, Context, PolicyEngine, evaluate, prepare
from mcpwall.policy._realpath import CachedRealpath

NAMES = ["d", "e", "f.txt", "ld", "lf", "lup", "lrel", "chain", "dangling", "loop1", "loop2", "abs", "self",
         "missing", "", ".", "..", "f.txt/x"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("links")
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("x")
    (root / "d" / "e" / "f.txt").write_text("y")
    os.symlink(root / "d", root / "ld")  # absolute link to a directory
    os.symlink("d/f.txt", root / "lf")  # relative link to a file
    os.symlink("..", root / "d" / "e" / "lup")  # a link up
    os.symlink("../d", root / "d" / "lrel")
    os.symlink("ld", root / "chain")  # a link to a link
    os.symlink("nowhere/at/all", root / "d" / "dangling")
    os.symlink("loop2", root / "d" / "loop1")
    os.symlink("loop1", root / "d" / "loop2")
    os.symlink("/etc", root / "d" / "abs")
    os.symlink(".", root / "d" / "e" / "self")
    return root


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=7), st.booleans(), st.booleans())
@example(["d", "d", "..", "loop1", "", "d"], False, False)  # CI, 2026-12-04: a missing name, `..`, then a loop
@example(["d", "loop1", "", "d"], False, False)
def test_every_path_resolves_as_os_path_realpath_resolves_it(tree: Path, parts: list[str], nul: bool,
                                                            slash: bool) -> None:
    path = str(tree) + "/" + "/".join(parts) + ("\x00x" if nul else "") + ("/" if slash else "")
    expected = _reference(path)
    warm = _WARM.setdefault(str(tree), CachedRealpath())
    for answer in (warm(path), CachedRealpath()(path), warm(path)):  # warm, cold, and again from the cache
        assert answer == expected or _through_a_loop(path), path


_WARM: dict[str, CachedRealpath] = {}


def _reference(path: str) -> str:
    """What the cache answered when it asked `os.path.realpath` about every path whole."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):  # a NUL `lstat` meets
        return path


def _through_a_loop(path: str) -> bool:
    """Whether the kernel opens nothing at `path` because it passes through a symlink loop. There
    `realpath` guesses (CPython 3.11 keeps the rest unresolved, and joins `loop//d` as the absolute
    `/d`), and the cache may resolve what follows the loop's parent: neither names a file. `realpath`
    also keeps a missing name and lets a `..` after it take it away, so it walks into a loop the
    kernel never reaches (`d/missing/../loop1//d`: ENOENT at `missing`): that path is judged as
    `realpath` walks it, lexically."""
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return True
        lexical = os.path.normpath(path)
        return e.errno in (errno.ENOENT, errno.ENOTDIR) and lexical != path and _through_a_loop(lexical)
    except ValueError:
        return False
    return False


def test_relative_paths_and_the_root_resolve_as_os_path_realpath_resolves_them(tree: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    cache = CachedRealpath()
    for path in ("ld/e/lup/f.txt", "chain/e", "d/../lf", "/", "//", "/etc", "/etc/", "/etc/../etc/hosts", "."):
        assert cache(path) == os.path.realpath(path), path


def test_a_link_swapped_under_a_cached_directory_is_seen_once_the_ttl_has_passed(tmp_path: Path) -> None:
    (tmp_path / "safe").mkdir()
    (tmp_path / "secret").mkdir()
    link = tmp_path / "work"
    os.symlink(tmp_path / "safe", link)
    now = [100.0]
    cache = CachedRealpath(ttl=2.0)
    cache._entry(str(link / "a.txt"), now[0])  # the directory's answer is cached at t=100
    link.unlink()
    os.symlink(tmp_path / "secret", link)
    # A path first asked at t=101.5 under the cached directory relies on its t=100 answer: it expires
    # with it, at t=102, not two seconds after it was asked.
    assert cache._entry(str(link / "b.txt"), 101.5)[1] == str(tmp_path / "safe" / "b.txt")
    assert cache._entry(str(link / "b.txt"), 102.0)[1] == str(tmp_path / "secret" / "b.txt")
    assert cache._entry(str(link / "a.txt"), 102.0)[1] == str(tmp_path / "secret" / "a.txt")


def test_a_path_through_a_link_into_etc_meets_the_rules_for_etc(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    os.symlink("/etc", tmp_path / "workspace" / "conf")
    policy = PolicyEngine.from_template("default").compiled
    from datetime import datetime

    ctx = Context(now=datetime(2026, 12, 2, 3, 0).astimezone())
    for path in (f"{tmp_path}/workspace/conf/passwd", f"{tmp_path}/workspace/./conf/hostname",
                 f"{tmp_path}/workspace/conf/../conf/shadow"):
        facts = prepare(Call(name="read_file", arguments={"path": path}))
        assert any(v.startswith("/etc/") for v in facts.values[0].variants), path
        assert evaluate(policy, facts, ctx).action == "deny", path
