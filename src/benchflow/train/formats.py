"""One row builder per trainer format (contracts §8.3).

Null fields are dropped from every row, except the ones asked for
(``group``, ``advantage``, ``reward_vector``): an unscored rollout's advantage
is written as null, never left out or 0.

- ``prime-sft``: ``messages`` + ``tool_defs`` (Prime-RL SFT).
- ``trl-sft``: conversational prompt/completion (``prompt`` = all but the last
  message, ``completion`` = the assistant's answer) + ``tools`` (TRL).
- ``skyrl-sft``: ``messages`` + ``tools`` with ``uid`` (SkyRL's SFT trainer).
- ``verl-sft``: ``messages`` + ``tools`` (JSON text, since tool schemas differ
  in shape from row to row and a parquet column has one type) for verl's
  multi-turn SFT dataset (``data.multiturn.messages_key=messages``,
  ``tools_key=tools``); written as parquet by :mod:`.output`.
- ``openenv-episodes``: one episode per rollout: ``steps`` of (observation =
  the messages since the previous action, action = the assistant message),
  the episode's ``reward`` and ``done``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .source import Rollout

FORMATS = ("prime-sft", "trl-sft", "branch-tree", "verl-sft", "skyrl-sft", "openenv-episodes")
SOURCE = "benchflow-llm-trajectory"
VERL_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


@dataclass
class Sample:
    """What every format builds a row from: one conversation of one rollout."""

    rollout: Rollout
    exchange_index: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    source_path: str
    extra: dict[str, Any] = field(default_factory=dict)
    """group / advantage / reward_vector, when asked for."""
    source: str = SOURCE
    """What the conversation was read from: the model calls, or (a Harbor trial) an ATIF trajectory."""


def _usage(rollout: Rollout) -> dict[str, Any] | None:
    result = rollout.result.agent_result
    return None if result is None else {k: v for k, v in result.model_dump().items() if v is not None}


def _compact(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if v is not None}


def prime_sft(s: Sample) -> dict[str, Any]:
    r = s.rollout
    return _compact({"messages": s.messages, "tool_defs": s.tools, "task_name": r.task, "source": s.source,
                     "source_path": s.source_path, "exchange_index": s.exchange_index, "reward": r.reward,
                     "score": r.reward, "model": r.model, "agent": r.agent, "token_usage": _usage(r)}) | s.extra


def trl_sft(s: Sample) -> dict[str, Any]:
    r = s.rollout
    return _compact({"prompt": s.messages[:-1], "completion": s.messages[-1:], "tools": s.tools,
                     "reward": r.reward, "task_id": r.task, "agent": r.agent, "model": r.model,
                     "exchange_index": s.exchange_index, "call_purpose": "agent", "source": s.source,
                     "source_path": s.source_path, "source_rollout_dir": r.rel, "token_usage": _usage(r)}) | s.extra


def skyrl_sft(s: Sample) -> dict[str, Any]:
    r = s.rollout
    return _compact({"messages": s.messages, "tools": s.tools, "uid": f"{r.rel}#{s.exchange_index}",
                     "reward": r.reward, "task_name": r.task, "agent": r.agent, "model": r.model,
                     "exchange_index": s.exchange_index, "source": s.source, "source_path": s.source_path}) | s.extra


def verl_sft(s: Sample) -> dict[str, Any]:
    r = s.rollout
    messages = [{key: (m.get(key) if key != "content" else m.get(key) or "") for key in VERL_MESSAGE_KEYS}
                for m in s.messages]
    return {"messages": messages, "tools": json.dumps(s.tools, ensure_ascii=False), "reward": r.reward,
            "task_name": r.task, "agent": r.agent, "model": r.model, "exchange_index": s.exchange_index,
            "source_path": s.source_path, "group": s.extra.get("group"), "advantage": s.extra.get("advantage")}


def openenv_episode(s: Sample) -> dict[str, Any]:
    r = s.rollout
    steps, observation = [], []
    for message in s.messages:
        if message["role"] == "assistant":
            steps.append({"observation": observation, "action": message})
            observation = []
        else:
            observation.append(message)
    return _compact({"episode_id": r.rel, "env": r.task, "task_name": r.task, "agent": r.agent, "model": r.model,
                     "tools": s.tools, "steps": steps, "reward": r.reward, "done": True, "source": s.source,
                     "source_path": s.source_path, "exchange_index": s.exchange_index}) | s.extra


BUILDERS = {"prime-sft": prime_sft, "trl-sft": trl_sft, "skyrl-sft": skyrl_sft, "verl-sft": verl_sft,
            "openenv-episodes": openenv_episode}
