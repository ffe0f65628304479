"""Which argument values the policy allowlists exempt, per call.

`allowlist.paths` and `allowlist.hosts` exempt a value from the profile's
restrictive rules and allow the call (docs/POLICY.md). Both are narrow on
purpose: an exemption is a hole in every deny rule at once, so a value earns
it only if *every* spelling of it is the allowlisted thing:

- a path: one path (no extra words, shell operators, substitutions,
  redirections, backslashes, controls or NUL) inside an allowlisted directory
  after `.`/`..` collapsing and symlink resolution;
- a URL: every host it reaches, under the WHATWG parser (Node) and the
  RFC 3986 one (`urllib`, httpx), is allowlisted (`_url.py`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mcpwall.policy._facts import ArgValue, Facts
from mcpwall.policy._url import collapse_posix, url_hosts

if TYPE_CHECKING:
    from mcpwall.policy._compile import CompiledPolicy

#: What a single path never contains: whitespace (extra words), shell operators and
#: substitutions, redirections, backslashes, controls and NUL. A value with any
#: of these in any spelling is not exempted by `allowlist.paths` (it may be a command).
_NOT_A_SINGLE_PATH = re.compile(r"[\s;&|<>`$\\\x00-\x1f\x7f]")


class View:
    """Per-call text lists, computed once and only when a rule needs them."""

    __slots__ = ("_free_net", "_free_path", "allow_hits", "facts", "policy")

    def __init__(self, facts: Facts, policy: CompiledPolicy) -> None:
        self.facts = facts
        self.policy = policy
        self._free_path: tuple[ArgValue, ...] | None = None
        self._free_net: tuple[ArgValue, ...] | None = None
        self.allow_hits: list[str] = []

    def _inside(self, path: str) -> bool:
        return any(path == p or path.startswith(p if p.endswith("/") else p + "/") for p in self.policy.allow_paths)

    def _path_allowed(self, v: ArgValue) -> bool:
        """Whether `v` is one path inside an allowlisted directory in every spelling.

        Only a single path is exempt: `/workspace/x && rm -rf /` begins with an
        allowlisted directory but is a command, and `/workspace/a/../b` reaches
        `/etc/b` when `a` links there (its resolved spelling is among the variants).
        """
        if not self._inside(v.canonical):
            return False
        for text in v.variants:
            if _NOT_A_SINGLE_PATH.search(text) is not None:
                return False
            if text.startswith("/") and not self._inside(collapse_posix(text)):
                return False
        return True

    def _host_allowed(self, v: ArgValue) -> bool:
        """Whether every host any spelling of `v` reaches, under either URL parser, is allowlisted."""
        found = False
        for text in v.variants:
            for host in url_hosts(text):
                if not any(host == h or (h.startswith(".") and (host.endswith(h) or host == h[1:]))
                           for h in self.policy.allow_hosts):
                    return False
                found = True
        return found

    def free_path_values(self) -> tuple[ArgValue, ...]:
        if self._free_path is None:
            if not self.policy.allow_paths:
                self._free_path = self.facts.values
            else:
                self._free_path = tuple(v for v in self.facts.values if not self._path_allowed(v))
        return self._free_path

    def free_net_values(self) -> tuple[ArgValue, ...]:
        if self._free_net is None:
            if not self.policy.allow_hosts:
                self._free_net = self.facts.values
            else:
                self._free_net = tuple(v for v in self.facts.values if not self._host_allowed(v))
        return self._free_net

    def implicit_allows(self) -> list[str]:
        hits = []
        if self.policy.allow_paths and any(self._path_allowed(v) for v in self.facts.values):
            hits.append("allowlist.paths")
        if self.policy.allow_hosts and any(self._host_allowed(v) for v in self.facts.values):
            hits.append("allowlist.hosts")
        return hits


__all__ = ["View"]
