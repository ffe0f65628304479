"""The stage order as documented is the order that runs.

`STAGE_ORDER` is the one list; each hook runs over the stages whose class
overrides it, in that order. The `mcpwall.stages` docstring and the diagram
in docs/ARCHITECTURE.md name, per hook, the stages it runs over: both must
say exactly that, so a stage added, moved or given a new hook fails here
until the documents say so too.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import mcpwall.stages
from mcpwall.pipeline import Stage
from mcpwall.stages import STAGE_ORDER

ROOT = Path(__file__).resolve().parents[2]
#: hook -> the label the documents use for it
HOOKS = {"on_request": "request", "on_response": "response", "on_complete": "complete",
         "on_server_message": "server message", "on_client_answer": "client answer"}
NAMES = [name for name, _ in STAGE_ORDER]


def _stage_class(name: str, module: str) -> type[Stage]:
    found = [c for c in vars(importlib.import_module(module)).values()
             if inspect.isclass(c) and issubclass(c, Stage) and c.__module__ == module and c.name == name]
    assert len(found) == 1, f"{module} should define one stage class named {name!r}"
    return found[0]


def _running(hook: str) -> list[str]:
    """The stages `hook` runs over, in pipeline order (as the pipeline computes it)."""
    return [name for name, module in STAGE_ORDER
            if getattr(_stage_class(name, module), hook) is not getattr(Stage, hook)]


def _named_in(text: str) -> list[str]:
    """Stage names in `text`, in the order they appear (whole words; the diagram capitalises two)."""
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, NAMES), key=len, reverse=True)) + r")\b",
                         re.IGNORECASE)
    return [m.group(1).lower() for m in pattern.finditer(text)]


def _sections(text: str, start: str, stop: str) -> dict[str, str]:
    """Label -> the text after `label:` up to the next label, between `start` and `stop`."""
    body = text[text.index(start):]
    body = body[:body.index(stop)]
    labels = "|".join(re.escape(label) for label in HOOKS.values())
    parts = re.split(rf"(?:^|\W)({labels})(?!\w):?(?:\s*\(`on_\w+`[^)]*\))?:?", body)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _docstring_sections() -> dict[str, str]:
    doc = mcpwall.stages.__doc__ or ""
    return _sections(doc, "- request", "`capture` (a tap")


def _diagram_sections() -> dict[str, str]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    diagram = text[text.index("## The gateway"):]
    diagram = diagram[:diagram.index("```", diagram.index("```") + 3)]
    # only the pipeline box's own column: what the diagram says about servers and transports is not an order
    inner = "\n".join(line.split("│")[1] for line in diagram.splitlines() if line.count("│") >= 2)
    return _sections(inner, "request:", "PolicyStore")


@pytest.mark.parametrize("hook", list(HOOKS))
def test_the_stages_docstring_lists_each_hooks_stages_in_the_order_they_run(hook: str) -> None:
    sections = _docstring_sections()
    assert _named_in(sections[HOOKS[hook]]) == _running(hook)


@pytest.mark.parametrize("hook", list(HOOKS))
def test_the_architecture_diagram_lists_each_hooks_stages_in_the_order_they_run(hook: str) -> None:
    sections = _diagram_sections()
    assert _named_in(sections[HOOKS[hook]]) == _running(hook)


def test_a_stage_with_a_hook_the_documents_do_not_name_is_noticed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check is live: give the metrics stage a request hook and the documents disagree."""
    metrics = _stage_class("metrics", "mcpwall.stages.metrics")

    async def on_request(self: Stage, ctx: object) -> None:
        return None

    monkeypatch.setattr(metrics, "on_request", on_request, raising=False)
    assert "metrics" in _running("on_request")
    assert _named_in(_docstring_sections()["request"]) != _running("on_request")


def test_the_pipeline_runs_the_server_message_and_client_answer_hooks_of_the_built_stages() -> None:
    """The hooks the documents describe are the ones the pipeline calls (dlp and the tripwire)."""
    from mcpwall.proxy._pipeline import Pipeline

    stages = mcpwall.stages.default_stages(config={"honeytokens": {"enabled": True}}, settings=None)
    pipeline = Pipeline(stages)
    assert [s.name for s in pipeline._server_message] == _running("on_server_message")
    assert [s.name for s in pipeline._client_answer] == _running("on_client_answer")
