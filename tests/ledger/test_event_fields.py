"""The ledger stage builds each row's `Event` through `new_event`, which passes every field on by
position (a keyword call of the class costs a dict from compiled code): a field added to `Event`, or
two of them swapped, must not put a value in the wrong column."""

from __future__ import annotations

import dataclasses

import pytest

from mcpwall.ledger import Event
from mcpwall.stages.audit import new_event


def test_every_field_reaches_its_own_attribute() -> None:
    names = [f.name for f in dataclasses.fields(Event)]
    values = {name: object() for name in names}
    event = new_event(**values)
    assert [name for name in names if getattr(event, name) is not values[name]] == []


def test_a_field_the_helper_does_not_know_fails_loudly() -> None:
    names = [f.name for f in dataclasses.fields(Event)]
    with pytest.raises(TypeError):
        new_event(**{name: None for name in names[:-1]})  # one missing: no default is taken silently


def test_what_a_client_sent_is_kept_as_it_came() -> None:
    """Compiled, a parameter declared `str` would be checked: a clientInfo name that is a number or an
    object reaches the row's builder unchanged, which writes it as text."""
    names = [f.name for f in dataclasses.fields(Event)]
    values: dict[str, object] = dict.fromkeys(names)
    values.update(method="tools/call", decision="allow", outcome="ok", ts=0.0, client=42,
                  client_version={"v": 1}, bytes_in=0, bytes_out=0, withhold_arguments=False)
    event = new_event(**values)
    kept: tuple[object, object] = (event.client, event.client_version)
    assert kept == (42, {"v": 1})
