"""A trial's ATIF trajectory (a Harbor trial's ``agent/trajectory.json``) as the chat conversations rows are
made of: the adapter between :mod:`benchflow.interop.atif_read`'s turns and :mod:`.conversations`.

The turns become OpenAI chat messages the way :mod:`.chat` makes them of a model call: a ``user`` or
``system`` step is that message; an ``agent`` step is an assistant message (its text; its tool calls with
their arguments as JSON text) followed by a ``tool`` message per call that has a result; its reasoning is
private and left out. Each agent step that called the model is one exchange: the conversation up to and
including its assistant message. A step with ``llm_call_count: 0`` (no model: a deterministic dispatch,
BenchFlow's oracle), a step copied from an earlier trajectory (``is_copied_context``: context, never a
target) and a step that said and called nothing are context only. The tools offered are the trajectory's
``agent.tool_definitions`` (most producers record none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchflow.interop.atif_read import AtifConversation


@dataclass
class Exchange:
    """One model response of the trajectory and the conversation that led to it."""

    step_id: int
    messages: list[dict[str, Any]]
    """The conversation, ending in the step's assistant message."""


def exchanges(conversation: AtifConversation) -> list[Exchange]:
    """Every exchange of the trajectory, in order."""
    messages: list[dict[str, Any]] = []
    found: list[Exchange] = []
    for turn, step_id in zip(conversation.turns, conversation.step_ids):
        if turn.source != "agent":
            messages.append({"role": turn.source, "content": turn.message})
            continue
        answer: dict[str, Any] = {"role": "assistant", "content": turn.message}
        if turn.tools:
            answer["tool_calls"] = [{"id": t.id, "type": "function", "function": {
                "name": t.name, "arguments": json.dumps(t.arguments, ensure_ascii=False)}} for t in turn.tools]
        messages.append(answer)
        if turn.model_calls != 0 and step_id not in conversation.copied and (turn.message or turn.tools):
            found.append(Exchange(step_id, list(messages)))
        messages += [{"role": "tool", "tool_call_id": t.id, "content": t.output}
                     for t in turn.tools if t.output is not None]
    return found
