"""Normalisation: spellings of a denied path or host never slip past a rule.

Strategy: one seatbelt rule written for `/etc` and one for a host, then every
spelling from the issue (and a real symlink made in a temporary directory)
must be denied, while look-alikes that are *not* the same file stay allowed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpwall.policy import forms
from mcpwall.policy._normalize import canonical_host
from tests.policy.helpers import compile_text, decide, rules

POLICY = compile_text(rules(
    "id: etc\ntarget: file\nmatch: pattern\nvalues: ['^/etc(/|$)']\naction: deny",
    "id: meta\ntarget: network\nmatch: pattern\nvalues: ['^https?://169\\.254\\.169\\.254']\naction: deny",
    "id: evil\ntarget: network\nmatch: pattern\nvalues: ['^https?://evil\\.example(:|/|$)']\naction: deny",
    default="allow"))


@pytest.mark.parametrize("path", [
    "/etc/shadow", "/etc/../etc/shadow", "//etc/shadow", "/etc/./shadow", "%2Fetc%2Fshadow",
    "%252Fetc%252Fshadow", "file:///etc/shadow", "file://localhost/etc/shadow", "/tmp/../etc/shadow",
    "/etc/shadow\x00.png", "///etc//shadow", "/var/../../etc/passwd",
])
def test_spellings_of_etc_are_denied(path: str) -> None:
    assert decide(POLICY, "read_file", {"path": path}).action == "deny"


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data", "http://0xa9fea9fe/", "http://2852039166/",
    "http://[::ffff:169.254.169.254]/", "HTTP://169.254.169.254:80/", "http://user:pw@169.254.169.254/",
    "https://EVIL.example/x", "https://evil.example./x", "https://evil.example:443/", "http://ok@evil.example/",
    "http%3A%2F%2Fevil.example%2F",
])
def test_spellings_of_a_denied_host_are_denied(url: str) -> None:
    assert decide(POLICY, "fetch", {"url": url}).action == "deny"


@pytest.mark.parametrize("value", ["/etcetera/file", "/home/etc/x", "etc/shadow", "https://notevil.example/",
                                   "https://evil.example.org/"])
def test_look_alikes_that_are_not_the_same_target_pass(value: str) -> None:
    assert decide(POLICY, "t", {"v": value}).action == "allow"


def test_a_symlink_into_etc_is_denied(tmp_path: Path) -> None:
    link = tmp_path / "innocent"
    os.symlink("/etc", link)
    assert decide(POLICY, "read_file", {"path": str(link / "hostname")}).action == "deny"


def test_home_relative_paths_are_expanded() -> None:
    variants, canonical = forms("~/.ssh/id_rsa", "/home/alice")
    assert canonical == "/home/alice/.ssh/id_rsa"
    assert "~/.ssh/id_rsa" in variants


def test_windows_paths_are_collapsed() -> None:
    variants, _ = forms("C:\\Windows\\Temp\\..\\System32\\x.dll", None)
    assert "C:\\Windows\\System32\\x.dll" in variants


@pytest.mark.parametrize(("host", "canonical"), [
    ("LocalHost.", "localhost"), ("0x7f.1", "127.0.0.1"), ("2130706433", "127.0.0.1"),
    ("[::ffff:7f00:1]", "127.0.0.1"), ("xn--bcher-kva.example", "bücher.example"),
])
def test_canonical_host(host: str, canonical: str) -> None:
    assert canonical_host(host) == canonical
