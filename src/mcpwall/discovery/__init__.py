"""Discovery: find every MCP server this machine is configured to use, score it, report it.

    result = scan(make_target())                 # every client, every file, deduplicated and scored
    data = report_data(result)                   # the JSON report (keys, never secret values)
    text = render_sarif(data, scrubber_for(result))
    p = plan_init(result, home, exe=find_mcpwall())   # init: what would change, verified
    apply_init(p); uninstall(home)               # write with backups; restore byte for byte

Detectors cover Claude Desktop, Claude Code, Cursor, VS Code (and Copilot),
Windsurf, Cline, Roo Code, Codex, Gemini CLI, Zed, Continue, Goose, JetBrains
(AI Assistant and Junie), ChatGPT Desktop and project-local files, on Linux,
macOS and Windows paths (docs/DISCOVERY.md lists each location and format).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpwall.discovery._backup import Restore, uninstall
from mcpwall.discovery._detect import sanitise_name, scan, secret_values, valid_name
from mcpwall.discovery._diff import print_report_diff, report_diff
from mcpwall.discovery._install import DEFAULT_GATEWAY, Applied, Plan, find_mcpwall
from mcpwall.discovery._install import apply as apply_init
from mcpwall.discovery._install import plan as plan_init
from mcpwall.discovery._locations import PLATFORMS, SCAN_HOME_ENV, SCAN_PLATFORM_ENV, ScanTarget, make_target
from mcpwall.discovery._model import (
    LEVEL_LABELS,
    LEVELS,
    ConfigFile,
    Risk,
    RiskFlag,
    ScanResult,
    Server,
    ServerEntry,
    count_levels,
    level_of,
)
from mcpwall.discovery._observatory import discover_artifacts, import_observatory
from mcpwall.discovery._owasp import OWASP_LLM_2025, RULE_OWASP
from mcpwall.discovery._policyseed import policy_text
from mcpwall.discovery._report import render_json, render_markdown, report_data, scrubber_for
from mcpwall.discovery._risk import RULES, Launch, RiskRule, assess
from mcpwall.discovery._sarif import render_sarif
from mcpwall.discovery._secrets import Scrubber, is_secret_name, redact_args, redact_url

if TYPE_CHECKING:
    from mcpwall.policy import ServerSpec


def discovered_server_specs(target: ScanTarget | None = None) -> dict[str, ServerSpec]:
    """Every server discovered on this machine as gateway specs (`mcpwall proxy --discover`)."""
    from mcpwall.discovery._specs import discovered_server_specs as specs

    return specs(target)


def risk_summary(spec: ServerSpec) -> dict[str, Any]:
    """A configured server's risk (score, level, flags) for the gateway's `GET /servers`."""
    from mcpwall.discovery._specs import risk_summary as summary

    return summary(spec)

__all__ = [
    "DEFAULT_GATEWAY",
    "LEVELS",
    "LEVEL_LABELS",
    "OWASP_LLM_2025",
    "PLATFORMS",
    "RULES",
    "RULE_OWASP",
    "SCAN_HOME_ENV",
    "SCAN_PLATFORM_ENV",
    "Applied",
    "ConfigFile",
    "Launch",
    "Plan",
    "Restore",
    "Risk",
    "RiskFlag",
    "RiskRule",
    "ScanResult",
    "ScanTarget",
    "Scrubber",
    "Server",
    "ServerEntry",
    "apply_init",
    "assess",
    "count_levels",
    "discover_artifacts",
    "discovered_server_specs",
    "find_mcpwall",
    "import_observatory",
    "is_secret_name",
    "level_of",
    "make_target",
    "plan_init",
    "policy_text",
    "print_report_diff",
    "redact_args",
    "redact_url",
    "render_json",
    "render_markdown",
    "render_sarif",
    "report_data",
    "report_diff",
    "risk_summary",
    "sanitise_name",
    "scan",
    "scrubber_for",
    "secret_values",
    "uninstall",
    "valid_name",
]
