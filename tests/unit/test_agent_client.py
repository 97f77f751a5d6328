"""The ACP client callbacks: permission policy, update → event mapping, refusals; the transport's order."""

from __future__ import annotations

import asyncio
import json

import pytest
from acp import RequestError, connect_to_agent, text_block
from acp.schema import (
    AgentMessageChunk,
    PermissionOption,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from benchflow.agents.acp_client import BenchClient, ProcessTransport, choose_permission
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


class _FastAgent:
    """A process whose agent answers a prompt the moment its bytes are written, while the client's
    ``drain`` is still waiting for its sender (``drain_yields`` loop turns, as the sandbox's stdin
    sent from a worker thread): the reply's ``session/update`` and the prompt's answer arrive in
    one chunk."""

    def __init__(self, drain_yields: int) -> None:
        self.stdout = asyncio.StreamReader()
        self.stdin = self
        self._yields = drain_yields

    def write(self, data: bytes) -> None:
        message = json.loads(data)
        if message.get("method") != "session/prompt":
            return
        update = {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                                "content": {"type": "text", "text": "Which door code?"}}}
        lines = [{"jsonrpc": "2.0", "method": "session/update", "params": update},
                 {"jsonrpc": "2.0", "id": message["id"], "result": {"stopReason": "end_turn"}}]
        self.stdout.feed_data(b"".join(json.dumps(line).encode() + b"\n" for line in lines))

    async def drain(self) -> None:
        for _ in range(self._yields):
            await asyncio.sleep(0)

    def close(self) -> None:
        self.stdout.feed_eof()


@pytest.mark.parametrize("drain_yields", [0, 1, 2, 3])
async def test_the_update_sent_with_the_prompt_answer_is_recorded_before_the_prompt_returns(drain_yields):
    client = BenchClient(lambda e: None, Activity())
    conn = connect_to_agent(client, ProcessTransport(_FastAgent(drain_yields)))
    try:
        client.record({"type": "user_message", "text": "Open the door."})
        response = await conn.prompt(session_id="s1", prompt=[text_block("Open the door.")])
        assert response.stop_reason == "end_turn"
        assert client.merger.last_reply() == "Which door code?"
    finally:
        await conn.close()
