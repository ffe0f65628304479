"""The self-protection guard, called directly (issue 22: the gateway protects its own files).

Strategy: a real home on disk (policy file, an `extends`'d base outside it, token,
ledger) and a workspace beside it holding symlinks into the home; `ProtectedSet.check`
gets each spelling of a protected path an agent could send (absolute, relative to
the server's directories, `..`, `.`, `//`, trailing `/`, case, `~`/`$HOME`/`${VAR}`,
`file://` with hosts and percent-encoding, symlinks and symlinked parents, nested
objects, arrays, JSON in strings, path keys, and words of command lines) and must
find every one; ordinary workspace paths and texts must pass. A call that can
mutate (by `mutates`) may not name an ancestor of a protected path (the issue 22
review's `move_file ws/p ws/q`), in any of those spellings nor as a command word;
reads and listings of `/`, `~` or an ancestor still pass. A home or policy
directory renamed behind the gateway's back is recognised by its (device, inode).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcpwall.security.selfguard import RULE_ID, ProtectedSet, mutates
from mcpwall.stages.selfguard import protected_set, server_dirs


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    user = tmp_path / "user"
    home = user / ".mcpwall"
    (home / "run").mkdir(parents=True)
    (home / "policy.yaml").write_text("extends: ../base.yaml\n")
    (home / "run" / "gateway.token").write_text("t0ken\n")
    (home / "ledger.db").write_text("")
    base = user / "base.yaml"
    base.write_text("rules: []\n")
    ws = user / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("notes\n")
    (ws / "home-link").symlink_to(home)
    (ws / "token-link").symlink_to(home / "run" / "gateway.token")
    (ws / "sub").mkdir()
    (ws / "sub" / "up").symlink_to(user)  # a symlinked parent: ws/sub/up/.mcpwall/...
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("MCPWALL_HOME", str(home))
    return {"user": user, "home": home, "base": base, "ws": ws}


def guard_for(tree: dict[str, Path]) -> ProtectedSet:
    home = tree["home"]
    g = ProtectedSet.build(home, [home / "policy.yaml", tree["base"]], token_files=[home / "run" / "gateway.token"],
                           ledger_paths=[home / "ledger.db"])
    g.user_home = str(tree["user"])
    return g


def spellings(tree: dict[str, Path]) -> list[str]:
    home, ws, user = str(tree["home"]), str(tree["ws"]), str(tree["user"])
    return [
        f"{home}/policy.yaml", f"{home}/run/gateway.token", f"{home}/ledger.db", f"{home}/ledger.db-wal",
        f"{home}/run/ledger.checkpoint", f"{home}/run/ledger.key", home, f"{home}/", f"{home}/run/",
        f"{home}//run//gateway.token", f"{home}/./policy.yaml", f"{home}/policy.yaml/", f"{home}/policy.yaml//",
        f"{ws}/../.mcpwall/policy.yaml", f"{ws}/./../.mcpwall/run/../run/gateway.token",
        f"{home.upper()}/POLICY.YAML", f"{user}/.MCPWALL/run/Gateway.Token",
        "~/.mcpwall/policy.yaml", "~/.mcpwall/run/gateway.token", "$HOME/.mcpwall/ledger.db",
        "${HOME}/.mcpwall/policy.yaml", "$MCPWALL_HOME/run/gateway.token", "${MCPWALL_HOME}",
        f"file://{home}/policy.yaml", f"file://localhost{home}/run/gateway.token", f"FILE://{home}/ledger.db",
        f"file://{home}/run/gateway%2Etoken", f"file:{home}/policy.yaml", f"file://evil.example{home}/policy.yaml",
        f"{home}/run/%67ateway.token".replace("/run/", "%2Frun%2F"),
        f"{ws}/home-link/policy.yaml", f"{ws}/home-link", f"{ws}/home-link/", f"{ws}/token-link",
        f"{ws}/sub/up/.mcpwall/run/gateway.token", f"{ws}/home-link/../ws/home-link/run/gateway.token",
        str(tree["base"]), f"{ws}/../base.yaml",
        f"{home}/policy.yaml\x00.txt",
        "home-link/policy.yaml", "token-link", "../.mcpwall/policy.yaml", "../base.yaml", "./home-link/run/",
    ]


def test_every_spelling_of_a_protected_path_is_found_issue_22(tree: dict[str, Path]) -> None:
    g = guard_for(tree)
    missed = [s for s in spellings(tree) if g.check({"path": s}, (str(tree["ws"]),)) is None]
    assert missed == []


def test_a_protected_path_is_found_at_any_depth_and_in_any_argument(tree: dict[str, Path]) -> None:
    g = guard_for(tree)
    token = f"{tree['home']}/run/gateway.token"
    for args in ({"edits": [{"path": token}]}, {"a": {"b": [[{"c": token}]]}}, {"payload": json.dumps({"p": token})},
                 {"files": {token: "x"}}, {"source": f"{tree['ws']}/notes.md", "destination": token},
                 {"paths": [f"{tree['ws']}/notes.md", "~/.mcpwall/policy.yaml"]}, {"opt": f"--output={token}"},
                 {"anything": token}, {"uri": f"file://{token}"}):
        finding = g.check(args, (str(tree["ws"]),))
        assert finding is not None, args
        assert "gateway" in finding.reason


@pytest.mark.parametrize("command", [
    "cat ~/.mcpwall/run/gateway.token",
    "cat '$HOME/.mcpwall/run/gateway.token'",
    "sed -i s/enforce/audit/ \"$MCPWALL_HOME/policy.yaml\"",
    "echo 'mode: audit' > ~/.mcpwall/policy.yaml",
    "echo x>>~/.mcpwall/policy.yaml",
    "cat<~/.mcpwall/run/gateway.token",
    "true && cp /tmp/x ~/.mcpwall/policy.yaml",
    "POLICY=~/.mcpwall/policy.yaml vi",
    "tar --file=~/.mcpwall/ledger.db -c .",
    "curl -H @~/.mcpwall/run/gateway.token -o/dev/null x",
    "sh -c 'cat ~/.mcpwall/run/gateway.token'",
    "echo `cat ~/.mcpwall/run/gateway.token`",
    "cat $(echo ~/.mcpwall/run/gateway.token)",
    "ls home-link",
    "cat token-link",
    "scp host:x ~/.mcpwall/run/gateway.token",
    "r\\m ~/.mcpwall/ledger.db",
])
def test_words_of_a_command_line_are_checked_as_paths(tree: dict[str, Path], command: str) -> None:
    g = guard_for(tree)
    assert g.check({"command": command}, (str(tree["ws"]),)) is not None
    assert g.check({"args": ["-c", command]}, (str(tree["ws"]),)) is not None


def test_ordinary_workspace_paths_and_texts_are_not_caught(tree: dict[str, Path]) -> None:
    g = guard_for(tree)
    ws = str(tree["ws"])
    for args in ({"path": f"{ws}/notes.md"}, {"path": "notes.md"}, {"path": f"{ws}/new/file.txt"},
                 {"path": f"{ws}/home-link-not/x"}, {"path": f"{ws}/home-link/../notes.md"},
                 {"path": str(tree["user"])}, {"path": f"{tree['user']}/.mcpwall-old/x"},
                 {"content": "the policy lives in ~/.mcpwall/policy.yaml\nand the token beside it\n"},
                 {"command": "ls -la && cat notes.md | wc -l"}, {"timezone": "Europe/Paris"},
                 {"url": "https://example.com/.mcpwall/policy.yaml"}, {"n": 3, "flag": True, "none": None},
                 {"entities": [{"name": "policy", "observations": ["likes tea"]}]}, {}):
        assert g.check(args, (ws,)) is None, args


def test_relative_paths_resolve_against_the_servers_directories(tree: dict[str, Path]) -> None:
    g = guard_for(tree)
    assert g.check({"path": ".mcpwall/policy.yaml"}, (str(tree["ws"]),)) is None
    assert g.check({"path": ".mcpwall/policy.yaml"}, (str(tree["ws"]), str(tree["user"]))) is not None
    assert g.check({"path": "policy.yaml"}, (str(tree["home"]),)) is not None
    assert g.check({"path": ".mcpwall"}, (str(tree["user"]),)) is not None


def test_arguments_too_large_to_inspect_are_refused(tree: dict[str, Path]) -> None:
    g = guard_for(tree)
    deep: object = "x"
    for _ in range(100):
        deep = [deep]
    assert g.check({"a": deep}, ()) is not None


def test_the_gateways_set_holds_home_policy_chain_ledger_and_installation(tree: dict[str, Path]) -> None:
    import mcpwall

    home = tree["home"]
    g = protected_set(home, [str(home / "policy.yaml"), str(tree["base"])], {"ledger": {"url": "elsewhere.db"}})
    for path in (home / "policy.yaml", tree["base"], home / "run" / "gateway.token", home / "elsewhere.db-wal",
                 Path(mcpwall.__file__), Path(mcpwall.__file__).parent / "policy" / "_facts.py"):
        assert g.check({"path": str(path)}, ()) is not None, path
    assert g.check({"path": str(tree["ws"] / "notes.md")}, ()) is None
    assert RULE_ID == "mcpwall.self-protection"


def test_a_servers_directories_are_its_cwd_its_directory_arguments_and_roots(tree: dict[str, Path]) -> None:
    from mcpwall.policy import ServerSpec

    spec = ServerSpec(command="server-filesystem", args=[str(tree["ws"]), "--flag", str(tree["user"] / "nope")],
                      cwd=str(tree["user"]), roots=[f"file://{tree['home']}"])
    assert server_dirs(spec) == (str(tree["user"]), str(tree["ws"]), str(tree["home"]), os.getcwd())
    assert server_dirs(None) == (os.getcwd(),)


def test_kernel_aliases_and_padded_paths_are_seen_through(tree: dict[str, Path]) -> None:
    """/proc/self/root and /proc/PID/cwd are symlinks the kernel follows; Node shortens a path padded
    past PATH_MAX with `./` or `x/..` before it opens it (and walking it as written must stay cheap)."""
    import time

    g = guard_for(tree)
    home = str(tree["home"])
    ws = (str(tree["ws"]),)
    for path in (f"/proc/self/root{home}/policy.yaml", f"/proc/{os.getpid()}/root{home}/run/gateway.token",
                 home.replace("/.mcpwall", "/" + "./" * 5000 + ".mcpwall") + "/policy.yaml",
                 home.replace("/.mcpwall", "/" + "x/../" * 200_000 + ".mcpwall") + "/policy.yaml"):
        started = time.perf_counter()
        assert g.check({"path": path}, ws) is not None, path[:80]
        assert time.perf_counter() - started < 2.0
    long_command = "echo " + "a " * 20_000 + f"> {home}/policy.yaml"
    assert g.check({"command": long_command}, ws) is not None


def test_a_protected_file_reached_through_the_users_name_or_another_variable_is_found(
        tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    g = guard_for(tree)
    monkeypatch.setenv("STATE", str(tree["home"]))
    for path in ("$STATE/policy.yaml", "${STATE}/run/gateway.token", "~/.mcpwall/run/"):
        assert g.check({"path": path}, ()) is not None, path


def test_a_hard_link_to_a_protected_file_is_found_by_its_inode(tree: dict[str, Path]) -> None:
    """A hard link has no path to resolve: its (device, inode) is the protected file's (issue 22)."""
    outside = tree["user"] / "base-link.yaml"
    os.link(tree["base"], outside)  # the extends'd policy file, outside the home
    inside = tree["ws"] / "t"
    os.link(tree["home"] / "run" / "gateway.token", inside)
    g = guard_for(tree)
    for path in (inside, outside, tree["ws"] / "sub" / ".." / "t"):
        finding = g.check({"path": str(path)}, ())
        assert finding is not None, path
        assert "hard link" in finding.what or "policy" in finding.what
    assert g.check({"path": str(tree["ws"] / "notes.md")}, ()) is None


# ---------------------------------------------------------------- ancestors and identity (issue 22 review)


def decide(g: ProtectedSet, tool: str, args: dict[str, Any], ws: Path) -> Any:
    """What the stage asks: the call's arguments, mutating as `mutates` says for this tool."""
    return g.check(args, (str(ws),), mutating=mutates(tool, args))


def ancestor_moves(tree: dict[str, Path]) -> list[tuple[str, dict[str, Any]]]:
    user, ws, home = tree["user"], tree["ws"], tree["home"]
    away = str(user.parent / "elsewhere")
    return [
        ("move_file", {"source": str(user), "destination": away}),
        ("move_file", {"source": f"{user}/", "destination": away}),
        ("move_file", {"source": f"{ws}/..", "destination": away}),
        ("move_file", {"source": f"{ws}/sub/up", "destination": away}),  # a symlink to the home's parent
        ("move_file", {"source": str(user).upper(), "destination": away}),
        ("move_file", {"source": "..", "destination": "../../elsewhere"}),  # relative to the server's directory
        ("move_file", {"source": "~", "destination": away}),
        ("move_file", {"source": "$HOME", "destination": away}),
        ("move_file", {"source": f"file://{user}", "destination": away}),
        ("move_file", {"source": str(user.parent), "destination": away}),
        ("move_file", {"source": f"{ws}/notes.md", "destination": str(user)}),  # replacing an ancestor
        ("rename", {"oldPath": str(user), "newPath": away}),
        ("delete_directory", {"path": str(user)}),
        ("remove", {"path": f"{user}//"}),
        ("copy_file", {"src": away, "dst": str(user)}),
        ("fs_op", {"from": str(user), "to": away}),
        ("write_file", {"path": str(user), "content": "x"}),
        ("create_directory", {"path": str(home)}),
        ("run_command", {"command": f"mv {user} {away}"}),
        ("run_command", {"command": f"mv '{ws}/..' {away}"}),
        ("run_command", {"command": f"cd /tmp && \\mv ~ {away}"}),
        ("run_command", {"command": f"rm -rf {user}"}),
        ("run_command", {"command": f"/bin/rm -r -- {user}/"}),
        ("run_command", {"command": f"find {user} -name x -delete"}),
        ("run_command", {"command": f"tar -C {user} -xf /tmp/a.tar"}),
        ("run_command", {"command": f"rsync -a --delete /tmp/empty/ {user}/"}),
        ("run_command", {"command": f"bash -c 'mv {user} {away}'"}),
        ("run_command", {"command": f"ln -sfn /tmp/x {user}"}),
        ("run_command", {"command": f"chmod -R 777 {user}"}),
        ("shell", {"args": ["mv", str(user), away]}),
    ]


def test_moving_deleting_or_replacing_an_ancestor_of_a_protected_path_is_refused_issue_22(
        tree: dict[str, Path]) -> None:
    """`move_file ws/p ws/q` with the home at ws/p/home renamed every protected file (issue 22 review)."""
    g = guard_for(tree)
    missed = [(tool, args) for tool, args in ancestor_moves(tree) if decide(g, tool, args, tree["ws"]) is None]
    assert missed == []
    finding = decide(g, "move_file", {"source": str(tree["user"]), "destination": "/tmp/x"}, tree["ws"])
    assert finding is not None
    assert "directory holding the gateway's own files" in finding.what


def test_reads_listings_and_workspace_moves_near_an_ancestor_stay_allowed(tree: dict[str, Path]) -> None:
    g = guard_for(tree)
    ws, user = tree["ws"], tree["user"]
    for tool, args in [
        ("list_directory", {"path": "/"}), ("search_files", {"path": "/", "pattern": "*.md"}),
        ("directory_tree", {"path": str(user)}), ("list_directory", {"path": "~"}),
        ("read_text_file", {"path": f"{ws}/notes.md"}), ("run_command", {"command": "ls -la ~ /"}),
        ("run_command", {"command": f"du -sh {user} && find / -name '*.md'"}),
        ("move_file", {"source": f"{ws}/notes.md", "destination": f"{ws}/notes2.md"}),
        ("move_file", {"source": str(ws / "sub"), "destination": str(user / "sub2")}),
        ("write_file", {"path": f"{ws}/a.txt", "content": "see / and ~ and .. and " + str(user)}),
        ("create_directory", {"path": f"{ws}/new"}), ("run_command", {"command": f"mv {ws}/a {ws}/b"}),
    ]:
        assert decide(g, tool, args, ws) is None, (tool, args)


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("move_file", {}, True), ("moveFile", {}, True), ("fs.rename", {}, True), ("delete_file", {}, True),
    ("rmdir", {}, True), ("write_file", {}, True), ("edit_file", {}, True), ("create_directory", {}, True),
    ("copy", {}, True), ("ln", {}, True), ("chmod_path", {}, True), ("truncate", {}, True),
    ("anything", {"source": "a", "destination": "b"}, True), ("x", {"newPath": "b"}, True),
    ("x", {"opts": {"target": "b"}}, True), ("bash", {"command": "mv a b"}, True),
    ("bash", {"command": "echo hi; find . -exec rm {} +"}, True), ("bash", {"cmd": "sh -c 'rm -rf x'"}, True),
    ("bash", {"argv": ["tar", "-xf", "a.tar"]}, True), ("bash", {"command": "/usr/bin/unlink x"}, True),
    ("read_text_file", {"path": "/"}, False), ("list_directory", {"path": "/"}, False),
    ("search_files", {"path": "/", "pattern": "x"}, False), ("directory_tree", {"path": "/"}, False),
    ("bash", {"command": "ls -la ~; cat notes.md | wc -l"}, False), ("get_file_info", {"path": "/"}, False),
])
def test_a_call_that_can_mutate_is_told_by_its_verbs_argument_names_and_programs(
        tool: str, args: dict[str, Any], expected: bool) -> None:
    assert mutates(tool, args) is expected


def test_a_renamed_home_and_a_moved_policy_file_are_still_known_by_their_inode_issue_22(
        tree: dict[str, Path]) -> None:
    """Identity, not only path: the home renamed by anything the gateway did not see is still its home."""
    user, home = tree["user"], tree["home"]
    shared = user / "shared"
    shared.mkdir()
    (shared / "team.yaml").write_text("rules: []\n")
    g = ProtectedSet.build(home, [home / "policy.yaml", shared / "team.yaml"],
                           token_files=[home / "run" / "gateway.token"], ledger_paths=[home / "ledger.db"])
    moved = user / "moved"
    os.rename(home, moved)
    os.rename(shared, user / "old")
    try:
        for path in (moved / "policy.yaml", moved / "run" / "gateway.token", moved / "run", moved,
                     moved / "new.yaml", moved / "run" / "new" / "x", user / "old" / "team.yaml",
                     tree["ws"] / "home-link" / "policy.yaml"):
            for tool in ("read_text_file", "write_file"):
                assert decide(g, tool, {"path": str(path)}, tree["ws"]) is not None, (tool, path)
        assert decide(g, "write_file", {"path": str(user / "old" / "other.yaml")}, tree["ws"]) is None
        assert decide(g, "read_text_file", {"path": str(tree["ws"] / "notes.md")}, tree["ws"]) is None
    finally:
        os.rename(moved, home)


def test_an_extends_path_through_a_symlinked_directory_is_protected_as_written_issue_22(
        tree: dict[str, Path]) -> None:
    """`extends: [/x/link/team.yaml]` with /x/link -> /y/team: the loader opens the written path at the
    next reload, so moving /x (not an ancestor of the resolved file) and putting a file there is refused."""
    user, home = tree["user"], tree["home"]
    team = user / "y" / "team"
    team.mkdir(parents=True)
    (team / "team.yaml").write_text('version: "1"\nrules: []\n')
    (user / "x").mkdir()
    (user / "x" / "link").symlink_to(team)
    (home / "policy.yaml").write_text(f'version: "1"\nextends: [{user}/x/link/team.yaml]\n')
    g = protected_set(home, [str(home / "policy.yaml"), str(team / "team.yaml")], {})
    for tool, args in [("move_file", {"source": str(user / "x"), "destination": str(user / "x-old")}),
                       ("move_file", {"source": str(user / "x" / "link"), "destination": str(user / "l2")}),
                       ("write_file", {"path": str(user / "x" / "link" / "team.yaml"), "content": "x"}),
                       ("delete_file", {"path": str(user / "x")})]:
        assert decide(g, tool, args, tree["ws"]) is not None, (tool, args)
    assert decide(g, "write_file", {"path": str(user / "x" / "other.yaml"), "content": "x"}, tree["ws"]) is None


@pytest.mark.parametrize(("command", "cwd", "refuse"), [
    ("rm -rf .", "user", True), ("rm -rf *", "user", True), ("rm -rf ./*", "user", True),
    ("mv * /tmp/away", "user", True), ("rm -rf ~/*", None, True), ("rm -rf {user}/.m*", None, True),
    ("rm -rf /*", None, True), ("rm -rf ..", "ws", True), ("tar -xf /tmp/a.tar", "user", True),
    ("unzip /tmp/a.zip", "user", True), ("tar -xf /tmp/a.tar", "ws", False), ("cp a b", "user", False),
    ("git clone https://example.com/r.git", "user", False), ("mkdir build", "user", False),
    ("rm -rf *.o", "ws", False), ("rm {ws}/*.o", None, False), ("ls *", "user", False),
])
def test_a_commands_own_cwd_and_its_globs_are_where_it_moves_things_issue_22(
        tree: dict[str, Path], command: str, cwd: str | None, refuse: bool) -> None:
    """`rm -rf *` with `cwd: ~` deletes the home: relative words and globs of a mutating command are
    resolved in the call's own cwd; the cwd itself is not refused for being an ancestor, unless the
    program writes paths it does not name there (an archive's members)."""
    g = guard_for(tree)
    args: dict[str, Any] = {"command": command.format(user=tree["user"], ws=tree["ws"])}
    if cwd is not None:
        args["cwd"] = str(tree[cwd])
    assert (decide(g, "run_command", args, tree["ws"]) is not None) is refuse


def test_a_file_that_gets_the_inode_of_a_rewritten_protected_file_is_not_protected_issue_22(
        tree: dict[str, Path]) -> None:
    """The checkpoint is rewritten by rename, which frees its old inode; a new workspace file that gets
    it was refused as 'a file of the gateway's under another name' (a workspace move failed in CI)."""
    home, ws = tree["home"], tree["ws"]
    checkpoint = home / "run" / "ledger.checkpoint"
    checkpoint.write_text("0\n")
    g = ProtectedSet.build(home, [home / "policy.yaml"], token_files=[home / "run" / "gateway.token", checkpoint],
                           ledger_paths=[home / "ledger.db"])
    old = os.stat(checkpoint).st_ino
    fresh = home / "run" / ".checkpoint.tmp"
    fresh.write_text("1\n")
    os.replace(fresh, checkpoint)  # as the ledger writer does: the old inode is free now
    reused = None
    for i in range(200):  # file systems hand a freed inode to the next file more often than not
        candidate = ws / f"f{i}.txt"
        candidate.write_text("x")
        if os.stat(candidate).st_ino == old:
            reused = candidate
            break
    if reused is None:
        pytest.skip("this file system did not reuse the freed inode within 200 files")
    for tool in ("read_text_file", "write_file", "move_file"):
        args = {"path": str(reused)} if tool != "move_file" else {"source": str(reused), "destination": str(ws / "b")}
        assert decide(g, tool, args, ws) is None, tool
    assert decide(g, "read_text_file", {"path": str(checkpoint)}, ws) is not None
