"""Fake home directories with each client's MCP config, in each client's documented format.

The paths are spelled out here per platform, from the clients' documentation
(not computed by the code under test), so a wrong location in the detectors
fails the tests. `build_home()` writes every client; `EXPECTED` says which
server names each client's files define.
"""

from __future__ import annotations

import json
from pathlib import Path

# -- documented locations ----------------------------------------------------------------------

#: client -> platform -> path relative to the home directory
USER_PATHS: dict[str, dict[str, str]] = {
    "claude-desktop": {
        "linux": ".config/Claude/claude_desktop_config.json",
        "darwin": "Library/Application Support/Claude/claude_desktop_config.json",
        "win32": "AppData/Roaming/Claude/claude_desktop_config.json",
    },
    "claude-code": {p: ".claude.json" for p in ("linux", "darwin", "win32")},
    "cursor": {p: ".cursor/mcp.json" for p in ("linux", "darwin", "win32")},
    "vscode": {
        "linux": ".config/Code/User/mcp.json",
        "darwin": "Library/Application Support/Code/User/mcp.json",
        "win32": "AppData/Roaming/Code/User/mcp.json",
    },
    "vscode-settings": {
        "linux": ".config/Code/User/settings.json",
        "darwin": "Library/Application Support/Code/User/settings.json",
        "win32": "AppData/Roaming/Code/User/settings.json",
    },
    "windsurf": {p: ".codeium/windsurf/mcp_config.json" for p in ("linux", "darwin", "win32")},
    "cline": {
        "linux": ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        "darwin": "Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
                  "cline_mcp_settings.json",
        "win32": "AppData/Roaming/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    },
    "roo-code": {
        "linux": ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
        "darwin": "Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/"
                  "mcp_settings.json",
        "win32": "AppData/Roaming/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
    },
    "codex": {p: ".codex/config.toml" for p in ("linux", "darwin", "win32")},
    "gemini-cli": {p: ".gemini/settings.json" for p in ("linux", "darwin", "win32")},
    "zed": {
        "linux": ".config/zed/settings.json",
        "darwin": ".config/zed/settings.json",
        "win32": "AppData/Roaming/Zed/settings.json",
    },
    "continue": {p: ".continue/config.yaml" for p in ("linux", "darwin", "win32")},
    "goose": {
        "linux": ".config/goose/config.yaml",
        "darwin": ".config/goose/config.yaml",
        "win32": "AppData/Roaming/Block/goose/config/config.yaml",
    },
    "jetbrains": {
        "linux": ".config/JetBrains/IntelliJIdea2025.2/options/llm.mcpServers.xml",
        "darwin": "Library/Application Support/JetBrains/PyCharm2025.3/options/llm.mcpServers.xml",
        "win32": "AppData/Roaming/JetBrains/WebStorm2025.3/options/llm.mcpServers.xml",
    },
    "junie": {p: ".junie/mcp/mcp.json" for p in ("linux", "darwin", "win32")},
    "copilot": {p: ".copilot/mcp-config.json" for p in ("linux", "darwin", "win32")},
    "chatgpt-desktop": {"darwin": "Library/Application Support/com.openai.chatgpt/mcp.json"},
}

# -- documented formats ------------------------------------------------------------------------

CONTENT: dict[str, str] = {
    "claude-desktop": json.dumps({
        "globalShortcut": "",
        "mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                                      "/Users/username/Desktop"]},
            "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=Europe/Paris"]},
        },
    }, indent=2),
    "claude-code": json.dumps({
        "numStartups": 12,
        "mcpServers": {"sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"}},
        "projects": {
            "/nonexistent/project": {
                "allowedTools": [],
                "mcpServers": {"local-db": {"type": "stdio", "command": "npx",
                                            "args": ["-y", "@bytebase/dbhub", "--transport", "stdio"], "env": {}}},
            },
        },
    }, indent=2),
    "cursor": json.dumps({
        "mcpServers": {
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                       "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"}},
            "linear": {"url": "https://mcp.linear.app/sse"},
        },
    }, indent=2),
    "vscode": """{
  // VS Code user MCP configuration (JSONC)
  "inputs": [
    {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true}
  ],
  "servers": {
    "Perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}
    },
    "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
    "github-remote": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}, // trailing comma next
  }
}
""",
    "vscode-settings": """{
  "editor.fontSize": 14,
  /* the older place for servers */
  "mcp": {"servers": {"legacy": {"command": "node", "args": ["/opt/legacy/server.js"]}}}
}
""",
    "windsurf": json.dumps({
        "mcpServers": {
            "brave-search": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search"],
                             "env": {"BRAVE_API_KEY": "${env:BRAVE_API_KEY}"}},
            "remote-docs": {"serverUrl": "https://docs.example.com/mcp"},
        },
    }, indent=2),
    "cline": json.dumps({
        "mcpServers": {
            "weather": {"command": "node", "args": ["/home/user/mcp/weather/build/index.js"], "env": {},
                        "disabled": False, "autoApprove": []},
            "remote-sse": {"url": "https://sse.example.com/sse", "disabled": True, "autoApprove": []},
        },
    }, indent=2),
    "roo-code": json.dumps({"mcpServers": {"roo-tool": {"command": "uvx", "args": ["mcp-server-git"]}}}, indent=2),
    "codex": """model = "o3"
# MCP servers for Codex
[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.context7.env]
MY_ENV_VAR = "MY_ENV_VALUE"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }
""",
    "gemini-cli": json.dumps({
        "theme": "Default",
        "mcpServers": {
            "pythonTools": {"command": "python", "args": ["-m", "my_mcp_server", "--port", "8080"],
                            "cwd": "./mcp-servers/python",
                            "env": {"DATABASE_URL": "$DB_CONNECTION_STRING", "API_KEY": "${EXTERNAL_API_KEY}"},
                            "timeout": 15000},
            "httpServer": {"httpUrl": "http://localhost:3000/mcp", "timeout": 5000},
            "sseServer": {"url": "https://sse.example.com/events"},
        },
    }, indent=2),
    "zed": """// Zed settings
{
  "theme": "One Dark",
  "context_servers": {
    "local-mcp-server": {"command": "some-command", "args": ["arg-1", "arg-2"], "env": {}},
    "remote-mcp-server": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${env:ZED_TOKEN}"}},
    "mcp-server-postgres": {"source": "extension", "settings": {}}, // provided by an extension
  },
}
""",
    "continue": """name: My Config
version: 0.0.1
schema: v1
mcpServers:
  - name: SQLite MCP
    command: npx
    args:
      - "-y"
      - "mcp-sqlite"
      - "/path/to/your/database.db"
  - name: Remote MCP
    type: streamable-http
    url: https://mcp.example.com/mcp
""",
    "goose": """GOOSE_PROVIDER: anthropic
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  filesystem:
    type: stdio
    name: filesystem
    enabled: true
    cmd: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    env_keys: []
    envs: {}
    timeout: 300
  remote-tools:
    type: streamable_http
    name: remote-tools
    enabled: true
    uri: "https://goose-tools.example.com/mcp"
    headers: {}
    timeout: 300
""",
    "jetbrains": """<application>
  <component name="McpApplicationServerCommands">
    <commands>
      <McpServerCommand>
        <option name="name" value="nx-mcp" />
        <option name="programPath" value="npx" />
        <option name="arguments" value="-y nx-mcp@latest" />
        <envs><env name="NX_TOKEN" value="${NX_TOKEN}" /></envs>
      </McpServerCommand>
    </commands>
  </component>
</application>
""",
    "junie": json.dumps({"mcpServers": {"junie-fs": {"command": "npx",
                                                     "args": ["-y", "@modelcontextprotocol/server-filesystem@2025.8.21", "/work"]}}}),
    "copilot": json.dumps({"mcpServers": {"playwright": {"type": "local", "command": "npx",
                                                         "args": ["@playwright/mcp@latest"], "tools": ["*"]}}}),
    "chatgpt-desktop": json.dumps({"mcpServers": {"notes": {"command": "/Applications/Notes MCP/notes-mcp"}}}),
}

#: client -> server entry names its user-level file defines (servers a client skips are left out)
EXPECTED: dict[str, set[str]] = {
    "claude-desktop": {"filesystem", "time"},
    "claude-code": {"sentry", "local-db"},
    "cursor": {"github", "linear"},
    "vscode": {"Perplexity", "fetch", "github-remote", "legacy"},
    "windsurf": {"brave-search", "remote-docs"},
    "cline": {"weather", "remote-sse"},
    "roo-code": {"roo-tool"},
    "codex": {"context7", "figma"},
    "gemini-cli": {"pythonTools", "httpServer", "sseServer"},
    "zed": {"local-mcp-server", "remote-mcp-server"},
    "continue": {"SQLite MCP", "Remote MCP"},
    "goose": {"filesystem", "remote-tools"},
    "jetbrains": {"nx-mcp"},
    "junie": {"junie-fs"},
    "copilot": {"playwright"},
    "chatgpt-desktop": {"notes"},
}

#: project-level files (relative to a project directory) and what they define
PROJECT_CONTENT: dict[str, tuple[str, str, set[str]]] = {
    ".mcp.json": ("claude-code", json.dumps({"mcpServers": {"api": {
        "type": "sse", "url": "https://api.example.com/sse", "headers": {"Authorization": "Bearer ${API_KEY}"}}}}),
        {"api"}),
    ".cursor/mcp.json": ("cursor", json.dumps({"mcpServers": {"proj-cursor": {"command": "node",
                                                                              "args": ["tools/server.js"]}}}),
                         {"proj-cursor"}),
    ".vscode/mcp.json": ("vscode", json.dumps({"servers": {"proj-vscode": {"type": "stdio", "command": "node",
                                                                           "args": ["${workspaceFolder}/srv.js"]}}}),
                         {"proj-vscode"}),
    ".codex/config.toml": ("codex", '[mcp_servers.proj-codex]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n',
                           {"proj-codex"}),
    ".gemini/settings.json": ("gemini-cli", json.dumps({"mcpServers": {"proj-gemini": {"command": "deno",
                                                                                       "args": ["run", "s.ts"]}}}),
                              {"proj-gemini"}),
    ".continue/mcpServers/playwright-mcp.yaml": ("continue", "name: Playwright mcpServer\nversion: 0.0.1\nschema: v1\n"
                                                 "mcpServers:\n  - name: Browser search\n    command: npx\n"
                                                 "    args:\n      - \"@playwright/mcp@latest\"\n",
                                                 {"Browser search"}),
    ".zed/settings.json": ("zed", '{"context_servers": {"proj-zed": {"command": "zed-mcp"}}}', {"proj-zed"}),
    "mcp.json": ("project", json.dumps({"mcpServers": {"proj-generic": {"command": "proj-server"}}}), {"proj-generic"}),
}


def write(home: Path, rel: str, text: str | bytes) -> Path:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def build_home(home: Path, platform: str, clients: list[str] | None = None) -> dict[str, Path]:
    """Write each client's user-level config for `platform`; returns client -> file written."""
    written = {}
    for client, paths in USER_PATHS.items():
        if clients is not None and client not in clients and not (client == "vscode-settings" and "vscode" in clients):
            continue
        if platform in paths:
            written[client] = write(home, paths[platform], CONTENT[client])
    return written


def build_project(project: Path) -> None:
    for rel, (_, text, _) in PROJECT_CONTENT.items():
        write(project, rel, text)


__all__ = ["CONTENT", "EXPECTED", "PROJECT_CONTENT", "USER_PATHS", "build_home", "build_project", "write"]
