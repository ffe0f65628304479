"""What `mcpwall inspect` looked at, in words: "no findings in 12 tools of server fs".

A bare "no findings" could not be told apart from a scan of an empty file or
of a server that listed nothing (issue 27, item 8); the count and the source
say what the clean result covers.
"""

from __future__ import annotations

from typing import Any


def payload_counts(data: Any) -> dict[str, int]:
    """How many tools, prompts or content blocks a saved payload holds (the shapes `scan_payload` reads)."""
    if isinstance(data, dict) and isinstance(data.get("result"), dict) and "jsonrpc" in data:
        data = data["result"]
    if isinstance(data, list):
        return {"tools": len(data)}
    if not isinstance(data, dict):
        return {}
    if isinstance(data.get("servers"), dict):
        return {"tools": sum(len(v.get("tools") or []) if isinstance(v, dict) else len(v)
                             for v in data["servers"].values() if isinstance(v, dict | list))}
    for key in ("tools", "prompts", "content"):
        if isinstance(data.get(key), list):
            return {key: len(data[key])}
    return {"content": 0} if "structuredContent" in data else {}


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def scanned_text(scanned: dict[str, Any]) -> str:
    """`12 tools of tools.json`, `1 tool result (2 content blocks) of r.json`, `5 tools of 2 servers (a, b)`."""
    if "file" in scanned:
        if "tools" in scanned:
            what = _n(scanned["tools"], "tool")
        elif "prompts" in scanned:
            what = _n(scanned["prompts"], "prompt")
        elif "content" in scanned:
            what = f"a tool result ({_n(scanned['content'], 'content block')})"
        else:
            what = "the payload"
        return f"{what} of {scanned['file']}"
    servers = list(scanned.get("servers", []))
    source = f"server {servers[0]}" if len(servers) == 1 else f"{len(servers)} servers ({', '.join(servers)})"
    return f"{_n(int(scanned.get('tools', 0)), 'tool')} of {source}"


__all__ = ["payload_counts", "scanned_text"]
