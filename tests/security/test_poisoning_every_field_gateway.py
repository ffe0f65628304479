"""The poisoning stage reads every field of what a real server lists, through the real gateway (issue 22, item 9).

Strategy: a small real MCP server written with the official SDK's low-level API
(servers/listed.py) lists, as written, a JSON file the test makes: one tool for each pair of a
known poisoning text (tests/security/poisoning_fields.py) and a field it hides in (property
names at any depth, `x-*` keys, `markdownDescription`, `errorMessage`, `type`/`format`/`required`
values, annotations, `_meta`, icons, output schemas), plus poisoned prompts and resources and an
honest tool of each kind. The gateway is built as `mcpwall proxy` builds it, in enforce mode, and
the official MCP client talks to /mcp over streamable HTTP. Every poisoned definition must be
left out of its list and refused when called (-32001) with the finding kind and severity the
same text gives in a description; the honest ones stay usable. Argument validation is off so
that the poisoning stage, not the schema stage, answers the calls (schemas here are odd on
purpose). On the old code most of these tools were listed and callable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from tests.security.poisoning_fields import (
    PROMPT_FIELDS,
    RESOURCE_FIELDS,
    TEXTS,
    TOOL_FIELDS,
    base_tool,
    poisoned_prompt,
    poisoned_resource,
    poisoned_tool,
)
from tests.trust.helpers import ENFORCE, mcp_client, serve_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(300)]

SERVER = Path(__file__).resolve().parent / "servers" / "listed.py"
POLICY = ENFORCE + "  schema: {validate: false}\n"


def _listing() -> tuple[dict[str, Any], dict[str, tuple[str, str]]]:
    """The server's lists, and for each poisoned name the (text, field) it carries."""
    tools: list[dict[str, Any]] = [base_tool("honest_count")]
    prompts: list[dict[str, Any]] = [{"name": "honest_prompt", "description": "Summarise a document."}]
    resources: list[dict[str, Any]] = [{"uri": "demo://honest", "name": "honest", "mimeType": "text/plain"}]
    carried: dict[str, tuple[str, str]] = {}
    for t, text_name in enumerate(sorted(TEXTS)):
        text = TEXTS[text_name][0]
        for f, field in enumerate(sorted(TOOL_FIELDS)):
            name = f"tool{t:02d}{f:02d}"
            tool = poisoned_tool(field, text, name=name)
            if field == "name":
                tool["name"] = name = f"tool{t:02d}{f:02d} {text}"
            tools.append(tool)
            carried[f"tool:{name}"] = (text_name, field)
        for f, field in enumerate(sorted(PROMPT_FIELDS)):
            prompt = poisoned_prompt(field, text)
            if field != "name":
                prompt["name"] = f"prompt{t:02d}{f:02d}"
            prompts.append(prompt)
            carried[f"prompt:{prompt['name']}"] = (text_name, field)
        for f, field in enumerate(sorted(RESOURCE_FIELDS)):
            resource = {**poisoned_resource(field, text), "uri": f"demo://doc{t:02d}{f:02d}"}
            resources.append(resource)
            carried[f"resource:{resource['uri']}"] = (text_name, field)
    return {"tools": tools, "prompts": prompts, "resources": resources}, carried


def _kinds(error: Any) -> set[tuple[str, str]]:
    from tests.security.poisoning_fields import POISON_KINDS

    data = error.data or {}
    return {(f["kind"], f["severity"]) for f in data.get("findings", []) if f["kind"] in POISON_KINDS}


async def test_every_poisoned_field_is_hidden_and_refused_with_the_descriptions_verdict(tmp_path: Path) -> None:
    listing, carried = _listing()
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps(listing))
    servers = {"p": {"command": sys.executable, "args": [str(SERVER), str(listed)]}}
    async with serve_gateway(tmp_path, servers, POLICY) as served, mcp_client(served.url) as client:
        tools = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
        assert tools == {"p__honest_count"}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == {"p__honest_prompt"}
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert resources == {"demo://honest"}

        assert not (await client.call_tool("p__honest_count", {"text": "a b"})).is_error
        wrong: list[str] = []
        for slot, (text_name, field) in carried.items():
            kind, _, name = slot.partition(":")
            expected = TEXTS[text_name][1]
            try:
                if kind == "tool":
                    await client.call_tool(f"p__{name}", {"text": "a b"})
                elif kind == "prompt":
                    await client.get_prompt(f"p__{name}", {"doc": "x"})
                else:
                    await client.read_resource(name)
            except MCPError as exc:
                if exc.error.code != -32001 or _kinds(exc.error) != expected:
                    wrong.append(f"{kind} {field} / {text_name}: {exc.error.code} {_kinds(exc.error)}")
            else:
                wrong.append(f"{kind} {field} / {text_name}: allowed")
        assert wrong == []


async def test_the_stdio_frontend_hides_and_refuses_the_same_definitions(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    from tests.proxy.harness import MCPWALL

    text_names = ["important-block", "tag-characters", "spelt-identifier"]
    fields = ["property name", "x-* value", "type value", "_meta key", "annotations.other", "top-level x-key value",
              "outputSchema property name", "icons text"]
    tools = [base_tool("honest_count")]
    expected: dict[str, set[tuple[str, str]]] = {}
    for t, text_name in enumerate(text_names):
        for f, field in enumerate(fields):
            name = f"tool{t:02d}{f:02d}"
            tools.append(poisoned_tool(field, TEXTS[text_name][0], name=name))
            expected[name] = TEXTS[text_name][1]
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps({"tools": tools}))
    (tmp_path / "policy.yaml").write_text(POLICY)
    args = ["wrap", "--name", "p", "--home", str(tmp_path), "--", sys.executable, str(SERVER), str(listed)]
    async with Client(StdioServerParameters(command=MCPWALL, args=args)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"honest_count"}
        wrong = []
        for name, kinds in expected.items():
            try:
                await client.call_tool(name, {"text": "a b"})
            except MCPError as exc:
                if exc.error.code != -32001 or _kinds(exc.error) != kinds:
                    wrong.append(f"{name}: {exc.error.code} {_kinds(exc.error)}")
            else:
                wrong.append(f"{name}: allowed")
        assert wrong == []
