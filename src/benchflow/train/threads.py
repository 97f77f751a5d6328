"""Which recorded model calls belong to the parent agent and which to a subagent it spawned.

The gateway records every call of a rollout in one ``llm_trajectory.jsonl``,
the calls of Claude subagents (the ``Task``/``Agent`` tool) among them. A
conversation is a thread of calls that share their opening: the system prompt
and the first user message (each call re-sends its conversation from the
start). The parent's thread is the one of the first call; every other thread
is a subagent's. A subagent is tagged with the parent's tool call that spawned
it: the call whose arguments carry the subagent's first user message (the
``prompt`` of the Task tool), else the parent's latest tool call made before
the subagent's first call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .chat import conversation


@dataclass
class Thread:
    key: tuple[str, str]
    exchanges: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    spawned_by: dict[str, Any] | None = None
    """``{"tool_call_id", "tool_name"}`` of the parent's call that started it (None for the parent)."""


def _opening(messages: list[dict[str, Any]]) -> tuple[str, str]:
    system = next((m.get("content") or "" for m in messages if m["role"] == "system"), "")
    user = next((m.get("content") or "" for m in messages if m["role"] == "user"), "")
    return str(system), str(user)


def _tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [call for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or []]


def _spawner(parent: Thread, first_index: int, prompt: str) -> dict[str, Any] | None:
    """The parent's tool call that started a subagent whose first call is ``first_index``."""
    latest: dict[str, Any] | None = None
    for index, exchange in parent.exchanges:
        if index > first_index:
            break
        found = conversation(exchange)
        if found is None:
            continue
        for call in _tool_calls(found[0]):
            function = call.get("function") or {}
            arguments = function.get("arguments") or ""
            try:
                given = json.loads(arguments).get("prompt") if arguments else None
            except (ValueError, AttributeError):
                given = None
            tag = {"tool_call_id": call.get("id"), "tool_name": function.get("name")}
            if prompt and (given == prompt or (given is None and prompt in arguments)):
                return tag
            latest = tag
    return latest


def split(exchanges: list[tuple[int, dict[str, Any]]]) -> list[Thread]:
    """The threads of a rollout's calls, the parent's first; calls without a conversation are left out."""
    threads: dict[tuple[str, str], Thread] = {}
    for index, exchange in exchanges:
        found = conversation(exchange)
        if found is None:
            continue
        key = _opening(found[0])
        threads.setdefault(key, Thread(key)).exchanges.append((index, exchange))
    ordered = list(threads.values())
    if not ordered:
        return []
    parent = ordered[0]
    for thread in ordered[1:]:
        thread.spawned_by = _spawner(parent, thread.exchanges[0][0], thread.key[1])
    return ordered
