"""A trial's stored trajectory events (``trajectory/acp_trajectory.jsonl``, contracts §3.5) read as turns.

Both export formats see a conversation the same way: the prompt (a user turn),
then agent turns, each the model's reasoning, its message and the tool calls it
made with their results, until the next prompt. An agent turn ends where the
model speaks or thinks again after calling tools (that is its next inference).
An ``oracle`` event is a deterministic turn (the task's solve script, no model);
any other event (``agent_timeout``, a line that did not parse, …) is a note.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from benchflow.agents.trajectory import TrajectoryMerger

_CALL_EXTRA = ("title", "kind", "status", "locations")


@dataclass
class ToolUse:
    """One tool call and, once it finished, what it returned."""

    id: str
    name: str
    arguments: dict[str, Any]
    output: str | None
    """The call's result as text; ``None`` while it never reported one (pending when the agent stopped)."""
    failed: bool
    extra: dict[str, Any]
    """What ACP says about the call beyond name and arguments: title, kind, status, locations."""


@dataclass
class Turn:
    source: Literal["user", "agent", "system"]
    message: str = ""
    reasoning: str | None = None
    tools: list[ToolUse] = field(default_factory=list)
    model_calls: int | None = None
    """0 for a deterministic turn (the oracle's script); ``None``: not known (an agent's turn)."""
    extra: dict[str, Any] = field(default_factory=dict)


def _text(item: Any) -> str:
    """One item of an ACP tool call's ``content`` as text."""
    if not isinstance(item, dict):
        return str(item)
    kind = item.get("type")
    if kind == "content":
        inner = item.get("content")
        if isinstance(inner, dict) and isinstance(inner.get("text"), str):
            return inner["text"]
        return f"[{inner.get('type', 'content')}]" if isinstance(inner, dict) else str(inner)
    if kind == "diff":
        path = str(item.get("path") or "file")
        old = str(item.get("oldText") or item.get("old_text") or "").splitlines(keepends=True)
        new = str(item.get("newText") or item.get("new_text") or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}")) or f"[no change to {path}]"
    if kind == "terminal":
        return f"[terminal {item.get('terminalId') or item.get('terminal_id') or ''}]".replace(" ]", "]")
    return json.dumps(item, ensure_ascii=False, default=str)


def _output(event: dict[str, Any]) -> str | None:
    content = event.get("content")
    if isinstance(content, list) and content:
        return "\n".join(_text(item) for item in content)
    raw = event.get("raw_output")
    if raw is None:
        return None
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)


def tool_use(event: dict[str, Any]) -> ToolUse:
    """A stored ``tool_call`` event: its name is the ACP kind (``execute``, ``read``, …), as ACP names no
    function; the raw input is the arguments (a value that is not an object is ``{"input": value}``)."""
    raw = event.get("raw_input")
    arguments = raw if isinstance(raw, dict) else ({} if raw is None else {"input": raw})
    status = event.get("status")
    finished = status in ("completed", "failed", "cancelled")
    output = _output(event)
    return ToolUse(id=str(event.get("tool_call_id")), name=str(event.get("kind") or "other"),
                   arguments=arguments, output=output if output is not None or not finished else "",
                   failed=status in ("failed", "cancelled"),
                   extra={k: event[k] for k in _CALL_EXTRA if event.get(k) is not None})


def _oracle(event: dict[str, Any]) -> Turn:
    command = str(event.get("command") or "solve.sh")
    call = ToolUse(id="oracle", name="bash", arguments={"command": f"bash {command}"},
                   output=str(event.get("stdout") or ""), failed=event.get("return_code") not in (0, None),
                   extra={"return_code": event.get("return_code")})
    return Turn("agent", message=f"Ran the task's oracle: {command}", tools=[call], model_calls=0)


def _note(event: dict[str, Any]) -> Turn:
    kind = str(event.get("type") or "event")
    rest = {k: v for k, v in event.items() if k != "type"}
    if kind == "agent_timeout":
        message = f"The agent was stopped: {event.get('reason') or 'timeout'}"
    elif kind == "unparsed":
        message = f"Trajectory line {event.get('line')} is not JSON"
    else:
        message = f"BenchFlow event: {kind}"
    return Turn("system", message=message, extra={"benchflow_event": kind, **rest})


def turns_of(events: Iterable[dict[str, Any]]) -> list[Turn]:
    """The events of one trajectory, in order, as turns.

    The events are folded first as the run folds them (:class:`TrajectoryMerger`), so a file a killed run
    left unmerged (chunks, ``tool_call_update`` patches) reads like a finished one."""
    merger = TrajectoryMerger()
    for event in events:
        merger.add(event)
    turns: list[Turn] = []
    agent: Turn | None = None
    for event in merger.events:
        kind = event.get("type")
        if kind in ("agent_message", "agent_thought"):
            if agent is None or agent.tools:
                agent = Turn("agent")
                turns.append(agent)
            text = str(event.get("text") or "")
            if kind == "agent_message":
                agent.message += text
            else:
                agent.reasoning = (agent.reasoning or "") + text
        elif kind == "tool_call":
            if agent is None:
                agent = Turn("agent")
                turns.append(agent)
            agent.tools.append(tool_use(event))
        elif kind == "user_message":
            agent = None
            turns.append(Turn("user", message=str(event.get("text") or "")))
        else:
            agent = None
            turns.append(_oracle(event) if kind == "oracle" else _note(event))
    return turns
