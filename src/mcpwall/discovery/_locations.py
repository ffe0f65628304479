"""Where each client keeps its MCP servers, on Linux, macOS and Windows.

A `ScanTarget` is the machine being looked at: a home directory, a platform
and the project directories to look in. Tests (and `--scan-home DIR
--platform win32`) point it at a fake home, so every platform's paths are
exercised on one machine; environment overrides (`XDG_CONFIG_HOME`,
`APPDATA`, `CODEX_HOME`...) are honoured only for the real home, so a fake
home is never mixed with the real one.

Sources for each location are the clients' own documentation (see
docs/DISCOVERY.md, which lists them with the format each file uses).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mcpwall.errors import ConfigError

PLATFORMS = ("linux", "darwin", "win32")
SCAN_HOME_ENV = "MCPWALL_SCAN_HOME"
SCAN_PLATFORM_ENV = "MCPWALL_SCAN_PLATFORM"

#: VS Code and the forks that host extensions such as Cline and Roo Code.
VSCODE_APPS = ("Code", "Code - Insiders", "VSCodium")
EXTENSION_HOSTS = (*VSCODE_APPS, "Cursor", "Windsurf")


@dataclass(frozen=True)
class ScanTarget:
    """The home, platform and projects a scan looks at."""

    home: Path
    platform: str
    projects: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def _env_dir(self, name: str) -> Path | None:
        value = self.env.get(name)
        return Path(value) if value else None

    @property
    def appdata(self) -> Path:
        """%APPDATA% (Roaming) on Windows."""
        return self._env_dir("APPDATA") or self.home / "AppData" / "Roaming"

    @property
    def localappdata(self) -> Path:
        return self._env_dir("LOCALAPPDATA") or self.home / "AppData" / "Local"

    @property
    def xdg_config(self) -> Path:
        """~/.config (or $XDG_CONFIG_HOME) - also what Zed and Goose use on macOS."""
        return self._env_dir("XDG_CONFIG_HOME") or self.home / ".config"

    @property
    def user_config(self) -> Path:
        """The per-user application config directory of the platform."""
        if self.platform == "win32":
            return self.appdata
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        return self.xdg_config


def current_platform() -> str:
    if sys.platform.startswith("win"):
        return "win32"
    return "darwin" if sys.platform == "darwin" else "linux"


def make_target(scan_home: Path | None = None, platform: str | None = None,
                projects: list[Path] | tuple[Path, ...] = (), include_cwd: bool | None = None,
                environ: Mapping[str, str] | None = None) -> ScanTarget:
    """The scan target for the command line's options.

    Without `scan_home` (and without $MCPWALL_SCAN_HOME) this is the real
    home, the current platform, and the current directory as a project (as
    seatbelt scans it). With a fake home, only the projects given are scanned.
    """
    env = dict(os.environ if environ is None else environ)
    if scan_home is None and env.get(SCAN_HOME_ENV):
        scan_home = Path(env[SCAN_HOME_ENV])
    platform = platform or env.get(SCAN_PLATFORM_ENV) or current_platform()
    if platform not in PLATFORMS:
        raise ConfigError(f"unknown platform {platform!r}; choose one of {', '.join(PLATFORMS)}")
    real = scan_home is None
    home = Path.home() if real else Path(scan_home).expanduser()  # type: ignore[arg-type]
    if include_cwd is None:
        include_cwd = real
    chosen: list[Path] = []
    for p in ([Path.cwd()] if include_cwd else []) + [Path(p) for p in projects]:
        p = p.expanduser().absolute()
        if p not in chosen:
            chosen.append(p)
    overrides = ("XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA", "CODEX_HOME", "CLAUDE_CONFIG_DIR")
    kept = {k: env[k] for k in overrides if real and env.get(k)}
    return ScanTarget(home=home.absolute(), platform=platform, projects=tuple(chosen), env=kept)


@dataclass(frozen=True)
class Location:
    """A file (or a glob of files) a client reads, and how to read it."""

    client: str
    path: Path
    shape: str
    scope: str = "user"
    glob: str | None = None
    project: Path | None = None


def _user_locations(t: ScanTarget) -> Iterator[Location]:
    h, cfg = t.home, t.user_config
    yield Location("claude-desktop", cfg / "Claude" / "claude_desktop_config.json", "mcpServers")
    claude_dir = t._env_dir("CLAUDE_CONFIG_DIR")
    yield Location("claude-code", (claude_dir or h) / ".claude.json", "claude_code")
    yield Location("cursor", h / ".cursor" / "mcp.json", "mcpServers")
    for app in VSCODE_APPS:
        user = cfg / app / "User"
        yield Location("vscode", user / "mcp.json", "vscode")
        yield Location("vscode", user / "settings.json", "vscode_settings")
        yield Location("vscode", user / "profiles", "vscode", glob="*/mcp.json")
    yield Location("copilot", h / ".copilot" / "mcp-config.json", "mcpServers")
    copilot_jb = (t.localappdata if t.platform == "win32" else t.xdg_config) / "github-copilot" / "intellij"
    yield Location("copilot", copilot_jb / "mcp.json", "vscode")
    yield Location("windsurf", h / ".codeium" / "windsurf" / "mcp_config.json", "mcpServers")
    for app in EXTENSION_HOSTS:
        storage = cfg / app / "User" / "globalStorage"
        yield Location("cline", storage / "saoudrizwan.claude-dev" / "settings" / "cline_mcp_settings.json",
                       "mcpServers")
        yield Location("roo-code", storage / "rooveterinaryinc.roo-cline" / "settings" / "mcp_settings.json",
                       "mcpServers")
    yield Location("cline", h / ".cline" / "data" / "settings" / "cline_mcp_settings.json", "mcpServers")
    codex_home = t._env_dir("CODEX_HOME") or h / ".codex"
    yield Location("codex", codex_home / "config.toml", "codex")
    yield Location("gemini-cli", h / ".gemini" / "settings.json", "mcpServers")
    zed = (t.appdata / "Zed") if t.platform == "win32" else (t.xdg_config / "zed")
    yield Location("zed", zed / "settings.json", "zed")
    yield Location("continue", h / ".continue" / "config.yaml", "continue_yaml")
    yield Location("continue", h / ".continue" / "config.json", "continue_json")
    yield Location("continue", h / ".continue" / "mcpServers", "continue_block", glob="*")
    goose = (t.appdata / "Block" / "goose" / "config") if t.platform == "win32" else (t.xdg_config / "goose")
    yield Location("goose", goose / "config.yaml", "goose")
    yield Location("jetbrains", cfg / "JetBrains", "jetbrains_xml", glob="*/options/llm.mcpServers.xml")
    yield Location("jetbrains", h / ".ai" / "mcp" / "mcp.json", "mcpServers")
    yield Location("junie", h / ".junie" / "mcp", "mcpServers", glob="*.json")
    if t.platform == "darwin":
        yield Location("chatgpt-desktop", h / "Library" / "Application Support" / "com.openai.chatgpt" / "mcp.json",
                       "mcpServers")


def project_locations(p: Path) -> Iterator[Location]:
    def loc(client: str, rel: str, shape: str, glob: str | None = None) -> Location:
        return Location(client, p / rel, shape, scope="project", glob=glob, project=p)

    yield loc("claude-code", ".mcp.json", "mcpServers")
    yield loc("cursor", ".cursor/mcp.json", "mcpServers")
    yield loc("vscode", ".vscode/mcp.json", "vscode")
    yield loc("vscode", ".vscode/settings.json", "vscode_settings")
    yield loc("roo-code", ".roo/mcp.json", "mcpServers")
    yield loc("codex", ".codex/config.toml", "codex")
    yield loc("gemini-cli", ".gemini/settings.json", "mcpServers")
    yield loc("zed", ".zed/settings.json", "zed")
    yield loc("continue", ".continue/mcpServers", "continue_block", glob="*")
    yield loc("jetbrains", ".ai/mcp/mcp.json", "mcpServers")
    yield loc("junie", ".junie/mcp", "mcpServers", glob="*.json")
    yield loc("project", "mcp.json", "mcpServers")
    yield loc("project", ".mcp/config.json", "mcpServers")


def locations(target: ScanTarget, extra_projects: list[Path] | None = None) -> list[Location]:
    """Every candidate location, user level first, then each project's."""
    out = list(_user_locations(target))
    projects = list(target.projects) + [p for p in extra_projects or [] if p not in target.projects]
    for p in projects:
        out.extend(project_locations(p))
    return out


def expand(location: Location) -> list[Path]:
    """The files a location names that exist (a glob may name several)."""
    if location.glob is None:
        return [location.path] if location.path.is_file() or _is_unreadable_file(location.path) else []
    try:
        return sorted(p for p in location.path.glob(location.glob) if p.is_file() or _is_unreadable_file(p))
    except OSError:
        return []


def _is_unreadable_file(path: Path) -> bool:
    """A dangling symlink, or a path that exists but cannot be stat'ed as a file, is still worth a finding."""
    try:
        return path.is_symlink() or (path.exists() and not path.is_dir())
    except OSError:
        return True


__all__ = [
    "EXTENSION_HOSTS",
    "PLATFORMS",
    "SCAN_HOME_ENV",
    "SCAN_PLATFORM_ENV",
    "VSCODE_APPS",
    "Location",
    "ScanTarget",
    "current_platform",
    "expand",
    "locations",
    "make_target",
    "project_locations",
]
