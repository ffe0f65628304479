"""The risk report as SARIF 2.1.0, for code scanning dashboards and SARIF viewers.

One result per (risk flag, config file entry): the location is the client's
config file and the line where the server is defined, so a viewer opens the
file at the right place. Every rule carries its OWASP LLM Top 10 (2025)
entries twice: as `properties.tags` (what GitHub code scanning shows) and as
relationships to the `OWASP LLM Top 10` taxonomy in `run.taxonomies` (what
the SARIF standard defines); results list their taxa too. Files that could
not be read are `config-unreadable` results at the file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mcpwall import __version__
from mcpwall.discovery._model import SARIF_LEVELS
from mcpwall.discovery._owasp import OWASP_LLM_2025, OWASP_URI, OWASP_VERSION, owasp_label, owasp_tags
from mcpwall.discovery._risk import RULES
from mcpwall.discovery._secrets import Scrubber

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TAXONOMY = "OWASP LLM Top 10"
_LEVEL = SARIF_LEVELS
#: GitHub code scanning reads `security-severity` (0-10) to rank security results.
_SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0"}
_TAXA = list(OWASP_LLM_2025)


def _rule_catalog() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for r in RULES:
        rules.append(_rule(r.id, r.severity, r.description, r.origin))
    rules.append(_rule("config-unreadable", "medium", "A client config file could not be read or parsed; its "
                       "servers were not checked", "mcpwall", level="warning"))
    return rules


def _rule(rule_id: str, severity: str, description: str, origin: str, level: str | None = None) -> dict[str, Any]:
    tags = owasp_tags(rule_id)
    name = "".join(part.capitalize() for part in rule_id.split("-"))
    help_text = description + (f". OWASP LLM Top 10 ({OWASP_VERSION}): "
                               + "; ".join(owasp_label(t) for t in tags) if tags else ".")
    return {
        "id": rule_id,
        "name": name,
        "shortDescription": {"text": description},
        "fullDescription": {"text": f"{description} (rule from {origin}; severity {severity})."},
        "help": {"text": help_text, "markdown": f"**{description}**\n\n"
                 + "".join(f"- [{owasp_label(t)}]({OWASP_URI})\n" for t in tags)},
        "defaultConfiguration": {"level": level or _LEVEL[severity]},
        "properties": {
            "tags": ["security", "mcp", *(f"OWASP-{t}:{OWASP_VERSION}" for t in tags)],
            "security-severity": _SECURITY_SEVERITY[severity],
            "precision": "medium",
            "severity": severity,
        },
        "relationships": [{"target": {"id": t, "index": _TAXA.index(t),
                                      "toolComponent": {"name": TAXONOMY, "index": 0}},
                           "kinds": ["relevant"]} for t in tags],
    }


def _taxonomy() -> dict[str, Any]:
    return {
        "name": TAXONOMY,
        "version": OWASP_VERSION,
        "organization": "OWASP",
        "informationUri": OWASP_URI,
        "shortDescription": {"text": f"OWASP Top 10 for Large Language Model Applications ({OWASP_VERSION})"},
        "taxa": [{"id": tid, "name": name, "shortDescription": {"text": f"{tid}:{OWASP_VERSION} {name}"},
                  "fullDescription": {"text": text}} for tid, (name, text) in OWASP_LLM_2025.items()],
    }


def _bases(data: dict[str, Any]) -> list[tuple[str, Path]]:
    """uriBaseIds: each scanned project (SRCROOT for the first, as code scanning expects) and HOME."""
    out = [("SRCROOT" if i == 0 else f"PROJECT{i + 1}", Path(p)) for i, p in enumerate(data["scan"]["projects"])]
    return [*out, ("HOME", Path(data["scan"]["home"]))]


def _location(path: str, bases: list[tuple[str, Path]]) -> dict[str, Any]:
    """A relative reference to a base when the file is under one, else an absolute file URI."""
    p = Path(path)
    for base_id, base in bases:
        try:
            rel = p.relative_to(base)
        except ValueError:
            continue
        return {"uri": quote(rel.as_posix()), "uriBaseId": base_id}
    return {"uri": p.as_uri() if p.is_absolute() else quote(path)}


def _fingerprint(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]


def render_sarif_data(data: dict[str, Any]) -> dict[str, Any]:
    """A SARIF 2.1.0 log (as data) from `report_data()`."""
    rules = _rule_catalog()
    index = {r["id"]: i for i, r in enumerate(rules)}
    artifacts: list[dict[str, Any]] = []
    artifact_index: dict[str, int] = {}
    bases = _bases(data)

    def where(path: str, client: str) -> dict[str, Any]:
        return {**_location(path, bases), "index": artifact(path, client)}

    def artifact(path: str, client: str) -> int:
        if path not in artifact_index:
            artifact_index[path] = len(artifacts)
            artifacts.append({"location": _location(path, bases),
                              "description": {"text": f"MCP configuration of {client}"},
                              "roles": ["analysisTarget"]})
        return artifact_index[path]

    results: list[dict[str, Any]] = []
    for s in data["servers"]:
        for f in s["risk"]["flags"]:
            for loc in s["locations"]:
                line = loc["line"] or 1
                region = {"startLine": line, "endLine": line}
                evidence = f" ({f['evidence']})" if f["evidence"] else ""
                fix = f" To fix: {f['advice']}." if f.get("advice") else ""
                results.append({
                    "ruleId": f["rule"],
                    "ruleIndex": index[f["rule"]],
                    "level": _LEVEL[f["severity"]],
                    "message": {"text": f"MCP server '{s['name']}' in {loc['client']}: {f['description']}"
                                        f"{evidence}.{fix}"},
                    "locations": [{
                        "physicalLocation": {
                            "artifactLocation": where(loc["path"], loc["client"]),
                            "region": region,
                        },
                        "logicalLocations": [{"name": loc["name"], "kind": "object",
                                              "fullyQualifiedName": f"{loc['client']}/{loc['name']}"}],
                    }],
                    "partialFingerprints": {"mcpwallServer/v1": _fingerprint(f["rule"], loc["path"], loc["name"])},
                    "taxa": [{"id": t, "index": _TAXA.index(t), "toolComponent": {"name": TAXONOMY, "index": 0}}
                             for t in f["owasp"]],
                    "properties": {"server": s["name"], "client": loc["client"], "scope": loc["scope"],
                                   "severity": f["severity"], "score": s["risk"]["score"],
                                   "level": s["risk"]["level"], "guarded": loc["guarded"],
                                   "advice": f.get("advice", ""),
                                   "tags": [f"OWASP-{t}:{OWASP_VERSION}" for t in f["owasp"]]},
                })
    for p in data["problems"]:
        results.append({
            "ruleId": "config-unreadable",
            "ruleIndex": index["config-unreadable"],
            "level": "warning",
            "message": {"text": f"{p['client']} config could not be used ({p['status']}): {p['error']}."},
            "locations": [{"physicalLocation": {"artifactLocation": where(p["path"], p["client"]),
                                                "region": {"startLine": 1, "endLine": 1}}}],
            "partialFingerprints": {"mcpwallServer/v1": _fingerprint("config-unreadable", p["path"])},
            "properties": {"client": p["client"], "status": p["status"]},
        })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "mcpwall", "version": __version__, "semanticVersion": __version__,
                                "rules": rules,
                                "supportedTaxonomies": [{"name": TAXONOMY, "index": 0}]}},
            "taxonomies": [_taxonomy()],
            "originalUriBaseIds": {base_id: {"uri": base.as_uri() + "/"} for base_id, base in bases
                                   if base.is_absolute()},
            "artifacts": artifacts,
            "results": results,
            "invocations": [{"executionSuccessful": True,
                             "properties": {"platform": data["scan"]["platform"],
                                            "servers": data["summary"]["totalServers"],
                                            "serversByLevel": data["summary"]["levels"]}}],
            "columnKind": "unicodeCodePoints",
            "properties": {"generatedAt": data["generatedAt"]},
        }],
    }


def render_sarif(data: dict[str, Any], scrub: Scrubber | None = None) -> str:
    text = json.dumps(render_sarif_data(data), indent=2, ensure_ascii=False) + "\n"
    return scrub(text) if scrub else text


__all__ = ["SARIF_SCHEMA", "TAXONOMY", "render_sarif", "render_sarif_data"]
