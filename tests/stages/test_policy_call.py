"""The policy stage builds the `Call` it decides on by position (a NamedTuple's `__new__` is an
interpreted frame, paid on every call): each field must still land in its own place."""

from __future__ import annotations

from mcpwall.pipeline import Session
from mcpwall.policy import Call
from mcpwall.stages.policy import call_for
from tests.harness import context


def test_the_policy_sees_each_part_of_a_call_under_its_own_name() -> None:
    session = Session(kind="http", client_name="claude-code", agent="agent-7")
    ctx = context(None, "tools/call", None, "read_file", {"path": "/etc/hosts"}, session)
    call = call_for(ctx)
    assert type(call) is Call
    assert len(call) == len(Call._fields)
    assert call._asdict() == Call(method="tools/call", name="read_file", arguments={"path": "/etc/hosts"},
                                  server="", description="", client="claude-code", agent="agent-7",
                                  session=session.id)._asdict()


def test_a_resource_read_is_decided_on_its_params_and_a_call_without_arguments_on_none() -> None:
    session = Session(kind="stdio")
    read = call_for(context(None, "resources/read", "docs", "file:///a.md", session=session,
                            params={"uri": "file:///a.md"}))
    assert (read.method, read.name, read.arguments, read.server, read.result) == (
        "resources/read", "file:///a.md", {"uri": "file:///a.md"}, "docs", None)
    bare = call_for(context(None, "tools/call", None, "ping", session=session, params={"name": "ping"}))
    assert bare.arguments == {}
    assert bare.session == session.id
