"""Renamed and added tools on a pinned server wait for a person (issue 22, item 10): the pin book and stage.

Strategy: the pin book is driven directly over an in-memory StateStore with the lists a server
would send at each step, as tests/trust/test_pins.py does; the pin stage's decisions (hidden,
refused, warned) are checked by calling its hooks on a stand-in gateway whose catalog is a dict.
A tool removed and re-added under a new name with a small description change was pinned as new
on the old code (only an identical description counted as a copy), and a new tool on a pinned
server was pinned silently by default: each spelling of a rename below (one character, case and
spacing, words reordered, a reworded description with the same schema shape, the rename seen
first in a partial list, the removal and the comeback in separate lists, a prompt) must now be a
pending `renamed` of its original, and an unrelated newcomer a pending `added` that only warns.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mcpwall.pipeline import Session
from mcpwall.protocol import ErrorCode
from mcpwall.security._poisoning_pins import PinBook, renamed_from, similarity
from mcpwall.stages.pins import PinStage, build
from mcpwall.state import MemoryStateStore
from tests.harness import context

DESC = "Get the weather forecast for a city for the next few days, with temperatures and rain."
ALERTS = "Weather alerts for a region, as issued by the national service."


def t(name: str, description: str = DESC, **schema: Any) -> dict[str, Any]:
    props = {"city": {"type": "string"}, "days": {"type": "integer"}, **schema}
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": props, "required": ["city"]}}


@pytest.fixture
def book() -> PinBook:
    clock = iter(range(1000, 100000))
    return PinBook(MemoryStateStore(), clock=lambda: float(next(clock)))


def _pinned(book: PinBook) -> None:
    assert book.sync("w", "tool", [t("get_forecast"), t("alerts", ALERTS, region={"type": "string"})],
                     full=True) == []


ALERTS_TOOL = t("alerts", ALERTS, region={"type": "string"})

RENAMES = {
    "one character": DESC.replace("few", "fwe"),
    "one character added": DESC + "!",
    "case and spacing": "  " + DESC.upper().replace(" ", "   "),
    "words reordered": "With temperatures and rain: get the weather forecast for the next few days for a city.",
    "reworded, same schema": "Fetch a forecast of the weather in a town for the coming days (temperature, rain).",
}


@pytest.mark.parametrize("variant", sorted(RENAMES))
def test_a_tool_renamed_with_a_small_change_in_one_list_is_a_pending_rename(book: PinBook, variant: str) -> None:
    _pinned(book)
    changes = book.sync("w", "tool", [t("forecast_lookup", RENAMES[variant]), ALERTS_TOOL], full=True)
    assert [(c.name, c.change, c.of) for c in changes] == [("forecast_lookup", "renamed", "get_forecast")]
    record = book.get("w", "tool", "forecast_lookup")
    assert record is not None
    assert record["hash"] is None
    assert record["pending"]["of"] == "get_forecast"


def test_a_removal_and_a_renamed_comeback_in_separate_lists_is_a_pending_rename(book: PinBook) -> None:
    _pinned(book)
    assert book.sync("w", "tool", [ALERTS_TOOL], full=True) == []
    changes = book.sync("w", "tool", [t("forecast_lookup", RENAMES["one character"]), ALERTS_TOOL], full=True)
    assert [(c.change, c.of) for c in changes] == [("renamed", "get_forecast")]


def test_a_rename_seen_first_in_a_partial_list_is_a_rename_once_the_whole_list_shows_the_removal(
        book: PinBook) -> None:
    _pinned(book)
    first = book.sync("w", "tool", [t("forecast_lookup", RENAMES["one character"])], full=False, on_new="warn")
    assert [(c.change, c.of) for c in first] == [("added", None)]
    later = book.sync("w", "tool", [t("forecast_lookup", RENAMES["one character"]), ALERTS_TOOL], full=True,
                      on_new="warn")
    assert [(c.change, c.of) for c in later] == [("renamed", "get_forecast")]
    # and it is not reported again
    assert book.sync("w", "tool", [t("forecast_lookup", RENAMES["one character"]), ALERTS_TOOL], full=True,
                     on_new="warn") == []


def test_a_rename_is_caught_even_when_new_tools_are_pinned_on_sight(book: PinBook) -> None:
    _pinned(book)
    changes = book.sync("w", "tool", [t("forecast_lookup", RENAMES["one character"]), ALERTS_TOOL], full=True,
                        on_new="pin")
    assert [c.change for c in changes] == ["renamed"]


def test_a_renamed_prompt_is_a_pending_rename(book: PinBook) -> None:
    args = [{"name": "doc", "required": True}, {"name": "style"}]
    prompt = {"name": "summarise", "description": "Summarise a document in a few plain sentences.", "arguments": args}
    book.sync("w", "prompt", [prompt], full=True)
    renamed = {**prompt, "name": "summary", "description": "Summarise a document in a few plain sentences!"}
    assert [(c.change, c.of) for c in book.sync("w", "prompt", [renamed], full=True)] == [("renamed", "summarise")]


def test_an_unrelated_new_tool_on_a_pinned_server_is_added_not_renamed(book: PinBook) -> None:
    _pinned(book)
    radar = t("radar", "Rain radar images of a region, as PNG.", region={"type": "string"})
    changes = book.sync("w", "tool", [radar, t("get_forecast"), ALERTS_TOOL], full=True, on_new="warn")
    assert [(c.name, c.change, c.of) for c in changes] == [("radar", "added", None)]


def test_a_different_tool_with_the_same_schema_shape_is_not_a_rename(book: PinBook) -> None:
    read = {"name": "read_file", "description": "Read the complete contents of a file from the file system.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
    listing = {**read, "name": "list_directory",
               "description": "Get a detailed listing of all files and directories in a specified path."}
    book.sync("fs", "tool", [read], full=True)
    assert [(c.change, c.of) for c in book.sync("fs", "tool", [listing], full=True, on_new="warn")] == \
        [("added", None)]


def test_similarity_scores_small_edits_high_and_other_text_low() -> None:
    assert similarity(DESC, RENAMES["one character"]) > 0.95
    assert similarity(DESC, ALERTS) < 0.5
    assert similarity("", DESC) == 0.0
    gone = {"get_forecast": {"definition": t("get_forecast")}}
    assert renamed_from("tool", t("x", "Completely different text about sending email."), gone) is None


# ---------------------------------------------------------------------- the stage

def _stage(catalog: dict[str, dict[str, Any]], config: dict[str, Any] | None = None,
           mode: str = "enforce") -> tuple[PinStage, Any]:
    stage = build({"stages": {"pins": config or {}}})
    assert stage is not None
    upstream = SimpleNamespace(name="w", state="ready",
                               catalog=SimpleNamespace(tools=catalog, prompts={}, resources=[], templates=[]))
    gateway = SimpleNamespace(state=MemoryStateStore(), servers={"w": upstream},
                              policy=SimpleNamespace(current=SimpleNamespace(mode=mode)),
                              tool_filters=[], spawn=lambda coro: coro.close())
    stage.bind(gateway)
    stage.check_upstream(upstream)
    return stage, upstream


def _call(stage: PinStage, name: str) -> Any:
    import asyncio

    ctx = context(stage.gateway, server="w", target=name, session=Session("http"))
    return asyncio.run(asyncio.wait_for(stage.on_request(ctx), 10))


def _visible(stage: PinStage, name: str) -> bool:
    ctx = context(stage.gateway, session=Session("http"))
    return stage._visible(ctx, "tools", "w", name, {})


def test_the_stage_hides_and_refuses_a_pending_rename_as_it_does_a_change() -> None:
    stage, upstream = _stage({"get_forecast": t("get_forecast"), "alerts": ALERTS_TOOL})
    upstream.catalog.tools = {"forecast_lookup": t("forecast_lookup", RENAMES["one character"]), "alerts": ALERTS_TOOL}
    assert [c.change for c in stage.check_upstream(upstream)] == ["renamed"]
    refused = _call(stage, "forecast_lookup")
    assert refused is not None
    assert refused.code == ErrorCode.BLOCKED
    assert "copy of 'get_forecast'" in refused.message
    assert not _visible(stage, "forecast_lookup")
    assert _call(stage, "alerts") is None


def test_a_new_tool_on_a_pinned_server_warns_by_default_and_waits_in_the_pin_book() -> None:
    assert build({}).on_new == "warn"  # type: ignore[union-attr]
    stage, upstream = _stage({"get_forecast": t("get_forecast")})
    upstream.catalog.tools = {**upstream.catalog.tools, "radar": t("radar", "Rain radar images of a region.")}
    assert [c.change for c in stage.check_upstream(upstream)] == ["added"]
    assert _call(stage, "radar") is None  # usable, with a warning
    assert _visible(stage, "radar")
    assert [r["name"] for r in stage.book.pending()] == ["radar"]


def test_a_new_tool_on_a_pinned_server_is_hidden_and_refused_with_on_new_block() -> None:
    stage, upstream = _stage({"get_forecast": t("get_forecast")}, {"onNew": "block", "onChange": "warn"})
    upstream.catalog.tools = {**upstream.catalog.tools, "radar": t("radar", "Rain radar images of a region.")}
    stage.check_upstream(upstream)
    refused = _call(stage, "radar")
    assert refused is not None
    assert "a new tool on a pinned server" in refused.message
    assert not _visible(stage, "radar")


def test_on_new_pin_keeps_the_old_silent_pinning() -> None:
    stage, upstream = _stage({"get_forecast": t("get_forecast")}, {"onNew": "pin"})
    upstream.catalog.tools = {**upstream.catalog.tools, "radar": t("radar", "Rain radar images of a region.")}
    assert stage.check_upstream(upstream) == []
    assert stage.book.pending() == []


def test_a_servers_first_list_is_pinned_whole_whatever_on_new_says() -> None:
    stage, _ = _stage({"get_forecast": t("get_forecast"), "alerts": ALERTS_TOOL}, {"onNew": "block"})
    assert stage.book.pending() == []
    assert _call(stage, "alerts") is None


def test_resources_that_come_and_go_are_pinned_on_sight_not_held(book: PinBook) -> None:
    # a server listing its documents: one description pattern, items replaced over time
    def doc(name: str) -> dict[str, Any]:
        return {"uri": f"docs://{name}", "name": name, "description": f"Static document file exposed from /docs: {name}"}

    book.sync("d", "resource", [doc("architecture.md")], full=True)
    assert book.sync("d", "resource", [doc("features.md")], full=True, on_new="warn") == []
    assert book.pending() == []
