"""The ACP client callbacks: permission policy, update → event mapping, refusals."""

from __future__ import annotations

import pytest
from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    PermissionOption,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from benchflow.agents.acp_client import BenchClient, choose_permission
from benchflow.agents.watchdog import Activity


def opts(*pairs):
    return [PermissionOption(option_id=i, name=i, kind=k) for i, k in pairs]


@pytest.mark.parametrize(("options", "chosen"), [
    (opts(("no", "reject_once"), ("bypassPermissions", "allow_once")), "bypassPermissions"),
    (opts(("a", "allow_once"), ("b", "allow_always"), ("c", "allow_always")), "b"),
    (opts(("x", "reject_once"), ("a", "allow_once"), ("b", "allow_once")), "b"),
    (opts(("x", "reject_once"), ("y", "reject_always")), "x"),
    ([], "default"),
])
def test_permission_policy(options, chosen):
    assert choose_permission(options) == chosen


async def test_updates_become_events_and_touch_activity():
    events = []
    act = Activity()
    client = BenchClient(events.append, act)
    before = act.last_activity
    await client.session_update("s", AgentMessageChunk(session_update="agent_message_chunk",
                                                       content=TextContentBlock(type="text", text="hi")))
    await client.session_update("s", ToolCallStart(session_update="tool_call", tool_call_id="t", title="ls",
                                                   kind="execute", status="pending"))
    assert act.pending_tool_call_ids() == ["t"]
    await client.session_update("s", ToolCallProgress(session_update="tool_call_update", tool_call_id="t",
                                                      status="completed"))
    assert events == [{"type": "agent_message", "text": "hi"},
                      {"type": "tool_call", "tool_call_id": "t", "title": "ls", "kind": "execute",
                       "status": "pending"},
                      {"type": "tool_call_update", "tool_call_id": "t", "status": "completed"}]
    assert act.last_activity >= before and act.n_tool_calls == 1 and act.n_message_chunks == 1
    assert act.pending_tool_call_ids() == []


async def test_fs_and_terminal_are_refused():
    client = BenchClient(lambda e: None, Activity())
    for call in (client.read_text_file, client.write_text_file, client.create_terminal):
        with pytest.raises(RequestError) as err:
            await call(session_id="s", path="/x")
        assert err.value.code == -32601
