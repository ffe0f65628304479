"""What a program's own text says it does: inline code's environment dumps and file reads, installs from a URL.

`_calls_shell` reads a command line's words (`printenv`, `cat ~/.netrc`); the program each simple command runs
is one `touches.programs` text (`python3 -c print(open('/x').read())`, `code -c ...` for a code tool's source).
Three things in that text are facts of their own (issue 25, tests/security/test_calls_heldout_spellings.py):

- the whole environment printed or sent by inline code (`print(os.environ)`, `JSON.stringify(process.env)`,
  `node -p process.env`, awk's `for (k in ENVIRON)`, PowerShell's `Get-ChildItem Env:`): `touches.env` `*`, as
  `printenv` is; one variable read (`os.environ.get("HOME")`, `process.env.PORT`) or the environment handed to a
  child (`env=os.environ.copy()`, `{...process.env}`) is not;
- a file inline code opens by a literal path (`open('/home/jane/.git-credentials')`, `readFileSync('~/.npmrc')`,
  `File.read`, `Get-Content`): `touches.files`, so the file rules judge it as they judge `cat`;
- a package installed from a URL off the registries (`pip install https://x.example/p.tar.gz`, an index on a
  bare IP address or over plain http, `--trusted-host`, an archive from a host that is no registry or code
  host): the sink `install <url>`, which `ask-package-install-url` asks about. An index over https on a named
  host (`--extra-index-url https://download.pytorch.org/whl/cu121`) and git or archive URLs of code hosts pass.
"""

from __future__ import annotations

import re
from typing import Final

from mcpwall.policy._calls_args import ENV, FILES, SINKS, Fact
from mcpwall.policy._calls_files import home
from mcpwall.policy._calls_net import url_host

_INLINE: Final = re.compile(
    r"^(?:python[0-9.]*|perl|ruby|php|node|nodejs|deno|bun|lua|pwsh|powershell|code|awk|gawk|mawk)\s")
_WHOLE_ENV: Final = re.compile(
    r"(?:print|pprint|dumps|write|str|repr|log|info|debug|send|post|urlencode)\s*\(\s*(?:dict\(\s*)?(?:os\.)?"
    r"environ\s*[,)]|dict\(\s*os\.environ\s*\)|os\.environ\.items\(\)\s*\)|"
    r"(?:stringify|log|dir|write|send|print|inspect)\s*\(\s*process\.env\s*[,)]|\s-p\s+['\"]?process\.env['\"]?$|"
    r"Object\.(?:entries|keys)\(\s*process\.env\s*\)|for\s*\(?\s*\w+\s+in\s+ENVIRON\s*\)|"
    r"\bENV\.(?:to_h|to_a|inspect|each)\b|(?:keys|each|print|dumper)[^;]*%ENV\b|getenv\(\s*\)|print_r\(\s*\$_(?:ENV|SERVER)|"
    r"(?i:(?:get-childitem|gci|dir|ls|get-item)\s+env:\\?\*?(?:\s|$)|\[environment\]::getenvironmentvariables\(\s*\))")
_OPENED: Final = re.compile(
    r"(?:\bopen|readFileSync|readFile|file_get_contents|fopen|File\.(?:read|open|readlines)|IO\.read|read_text|"
    r"read_bytes|Path|Get-Content|gc|cat)\s*\(?\s*['\"]((?:/|~/|\$HOME/|[A-Za-z]:\\)[^'\"\n]{1,1024})['\"]")
_INSTALL: Final = re.compile(
    r"^(?:pip[0-9.]*|pipx|uv\s+pip|python[0-9.]*\s+-m\s+pip|npm|pnpm|yarn|bun|gem|cargo|composer)\s+"
    r"(?:\S+\s+)*?(?:install|i|add)\s")
_INSTALL_URL: Final = re.compile(r"(?i)\b(?:git\+)?(?:https?|ftp)://[^\s'\"]+")
_CODE_HOSTS: Final = ("pypi.org", "pythonhosted.org", "npmjs.org", "npmjs.com", "yarnpkg.com", "rubygems.org",
                      "crates.io", "github.com", "githubusercontent.com", "gitlab.com", "bitbucket.org",
                      "codeberg.org", "sourceforge.net", "pytorch.org", "nvidia.com")
_ARCHIVE: Final = re.compile(r"(?i)\.(?:tar\.gz|tgz|tar\.bz2|tar\.xz|whl|zip|egg|gem|crate)(?:[?#]|$)")
_IP: Final = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|\d{8,10}|0x[0-9a-f]{6,8}|[0-9a-f:]*:[0-9a-f:]+)$")
_LOCAL: Final = re.compile(r"^(?:localhost|127(?:\.\d{1,3}){3}|::1)$")


def _code_host(host: str) -> bool:
    return any(host == h or host.endswith("." + h) for h in _CODE_HOSTS)


def _installed_from(text: str) -> list[str]:
    """The URLs an install command line takes packages from that are no registry's or code host's."""
    out = []
    trusted = "--trusted-host" in text
    for url in _INSTALL_URL.findall(text):
        host = url_host(url.removeprefix("git+"))
        if _LOCAL.match(host) is not None:
            continue
        if trusted or _IP.match(host) is not None or url.lower().startswith("http://") or (
                _ARCHIVE.search(url) is not None and not _code_host(host)):
            out.append(url)
    return out


def program_facts(program: str, out: list[Fact]) -> None:
    """Add what one `touches.programs` text's own code or arguments reveal (see the module's docstring)."""
    if _INLINE.match(program) is not None:
        if "env" in program.lower() and _WHOLE_ENV.search(program) is not None:
            out.append((ENV, "*"))
        if "'" in program or '"' in program:
            out.extend((FILES, home(m.group(1))) for m in _OPENED.finditer(program))
    elif program.lower().startswith(("get-childitem", "gci", "dir ", "ls env:", "get-item")):
        if _WHOLE_ENV.search(program) is not None:
            out.append((ENV, "*"))
    elif "://" in program and _INSTALL.match(program) is not None:
        out.extend((SINKS, f"install {url}") for url in _installed_from(program))


__all__ = ["program_facts"]
