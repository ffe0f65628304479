"""The OWASP Top 10 for LLM Applications, 2025 edition, and which risk rule maps where.

mcp-seatbelt tagged its flags with a mixture of the 2023 and 2025 numbering
(LLM04 "Model Denial of Service" for privilege escalation, LLM08 "Vector
Embedding Weaknesses" for remote URLs). These are the 2025 entries, and each
rule is mapped by what the risk lets an agent do.
"""

from __future__ import annotations

OWASP_VERSION = "2025"
OWASP_URI = "https://genai.owasp.org/llm-top-10/"

#: id -> (name, what it means for an MCP server configuration)
OWASP_LLM_2025: dict[str, tuple[str, str]] = {
    "LLM01": ("Prompt Injection", "Input (including tool results) that changes the model's behaviour."),
    "LLM02": ("Sensitive Information Disclosure", "Credentials, personal data or files reaching the model or a third party."),
    "LLM03": ("Supply Chain", "Third-party packages, images and services the application depends on."),
    "LLM04": ("Data and Model Poisoning", "Tampered data, models or tools that change behaviour."),
    "LLM05": ("Improper Output Handling", "Model output passed to interpreters, shells or browsers unchecked."),
    "LLM06": ("Excessive Agency", "Tools with more functionality, permissions or autonomy than the task needs."),
    "LLM07": ("System Prompt Leakage", "Instructions or secrets in prompts exposed to users or tools."),
    "LLM08": ("Vector and Embedding Weaknesses", "Weaknesses in retrieval and embedding pipelines."),
    "LLM09": ("Misinformation", "Confidently wrong output relied upon."),
    "LLM10": ("Unbounded Consumption", "Unlimited use of compute, money or rate-limited resources."),
}

#: risk rule -> OWASP LLM 2025 ids (most relevant first)
RULE_OWASP: dict[str, tuple[str, ...]] = {
    # mcp-seatbelt's 13
    "shell-interpreter": ("LLM06", "LLM05"),
    "docker-container": ("LLM06",),
    "no-sandbox": ("LLM06",),
    "network-tool": ("LLM06", "LLM02"),
    "network-transport": ("LLM03",),
    "process-spawn": ("LLM06", "LLM05"),
    "destructive-fs": ("LLM06",),
    "remote-access": ("LLM02",),
    "sensitive-env": ("LLM02",),
    "package-runner": ("LLM03",),
    "risky-package": ("LLM03", "LLM06"),
    "privilege-escalation": ("LLM06",),
    "sensitive-paths": ("LLM02",),
    # ours
    "inline-secret": ("LLM02",),
    "secret-in-args": ("LLM02",),
    "plaintext-http": ("LLM02", "LLM03"),
    "unpinned-package": ("LLM03",),
    "world-writable-command": ("LLM03", "LLM04"),
    "broad-filesystem": ("LLM06", "LLM02"),
    "config-unreadable": (),
}


def owasp_tags(rule: str) -> tuple[str, ...]:
    return RULE_OWASP.get(rule, ())


def owasp_label(tag: str) -> str:
    """`LLM06:2025 Excessive Agency`."""
    name = OWASP_LLM_2025.get(tag, ("", ""))[0]
    return f"{tag}:{OWASP_VERSION} {name}".strip()


__all__ = ["OWASP_LLM_2025", "OWASP_URI", "OWASP_VERSION", "RULE_OWASP", "owasp_label", "owasp_tags"]
