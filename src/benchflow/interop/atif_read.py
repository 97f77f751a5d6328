"""An ATIF trajectory (a Harbor trial's ``agent/trajectory.json``, or one ``bench traj export`` wrote) read as
the turns of a conversation: the same :class:`~benchflow.interop.turns.Turn` list a BenchFlow trial's ACP
trajectory reads as (:func:`benchflow.interop.turns.turns_of`), so training rows and the viewer take one shape.

Each step is one turn, the inverse of :mod:`.atif`'s step: ``source`` and ``message`` (content parts as
text, an image or audio part as ``[image]``/``[audio]``), ``reasoning_content``, ``llm_call_count`` and
``extra``; each tool call is a :class:`~benchflow.interop.turns.ToolUse` (``function_name`` its name,
``extra`` its extra) whose output is the text of the observation results naming it (``failed`` when a
result's ``extra`` says ``failed`` or ``is_error``). An observation result that names no call (Harbor's
terminus-2 shares one terminal output among several commands) is what the environment answered: a
``user`` turn after the step, ``extra.observation_of_step`` its step. Embedded subagent trajectories and
per-step metrics and timestamps are not read.

The document is checked with Harbor's own ``Trajectory`` model where Harbor is importable (Python 3.12+
with ``harbor`` installed), and in any case for the fields read here; a document that fails either is
:class:`~benchflow.records.Unreadable` (one line naming the file and the field).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.records import Unreadable, read_json

from .turns import ToolUse, Turn

SOURCES = ("user", "agent", "system")


@dataclass
class AtifConversation:
    """The turns of one ATIF trajectory, with what a trainer needs beside them."""

    turns: list[Turn]
    step_ids: list[int]
    """The ATIF ``step_id`` each turn came from (an unlinked observation's turn: its step's)."""
    copied: frozenset[int] = frozenset()
    """Step ids marked ``is_copied_context`` (context carried over from an earlier trajectory: not trained on)."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """``agent.tool_definitions`` (OpenAI function schemas), when the producer recorded them."""
    model: str | None = None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        kind = part.get("type")
        parts.append((part.get("text") or "") if kind == "text" else f"[{kind}]")
    return "".join(parts)


def _content_ok(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type") in ("text", "image", "audio") for p in value))


def _check(document: Any) -> None:
    """The fields read here, as ATIF defines them; raises ValueError naming the first wrong one."""
    if not isinstance(document, dict) or not str(document.get("schema_version") or "").startswith("ATIF-v1."):
        raise ValueError("schema_version: not an ATIF-v1.x document")
    steps = document.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ValueError("steps: an ATIF trajectory needs at least one step")
    for index, step in enumerate(steps):
        where = f"steps[{index}]"
        if not isinstance(step, dict) or step.get("source") not in SOURCES:
            raise ValueError(f"{where}.source: one of {', '.join(SOURCES)}")
        if not _content_ok(step.get("message")):
            raise ValueError(f"{where}.message: a string or a list of content parts")
        for name, kind in (("reasoning_content", str), ("llm_call_count", int), ("extra", dict)):
            if step.get(name) is not None and not isinstance(step[name], kind):
                raise ValueError(f"{where}.{name}: a {kind.__name__}")
        for number, call in enumerate(step.get("tool_calls") or []):
            if not (isinstance(call, dict) and isinstance(call.get("tool_call_id"), str)
                    and isinstance(call.get("function_name"), str) and isinstance(call.get("arguments"), dict)
                    and isinstance(call.get("extra") or {}, dict)):
                raise ValueError(f"{where}.tool_calls[{number}]: tool_call_id, function_name and arguments object")
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, dict) else [] if observation is None else None
        if not isinstance(results, list) or not all(
                isinstance(r, dict) and (r.get("content") is None or _content_ok(r.get("content"))) for r in results):
            raise ValueError(f"{where}.observation.results: objects whose content is text or content parts")


def _harbor_check(document: dict[str, Any]) -> None:
    """Harbor's own model, where Harbor is installed (it needs Python 3.12+); nothing otherwise."""
    try:
        from harbor.models.trajectories import Trajectory
    except ImportError:  # Harbor is optional: the plain check above covers every field read here
        return
    Trajectory.model_validate(document)  # a pydantic ValidationError is a ValueError


def _failed(result: dict[str, Any]) -> bool:
    extra = result.get("extra") if isinstance(result.get("extra"), dict) else {}
    return extra.get("failed") is True or extra.get("is_error") is True


def _step_turns(step: dict[str, Any]) -> list[Turn]:
    results = (step.get("observation") or {}).get("results") or []
    tools = []
    for call in step.get("tool_calls") or []:
        answers = [r for r in results
                   if r.get("source_call_id") == call["tool_call_id"] and r.get("content") is not None]
        tools.append(ToolUse(id=call["tool_call_id"], name=call["function_name"], arguments=call["arguments"],
                             output="\n".join(_text(r["content"]) for r in answers) if answers else None,
                             failed=any(_failed(r) for r in answers), extra=dict(call.get("extra") or {})))
    turn = Turn(step["source"], message=_text(step["message"]), reasoning=step.get("reasoning_content"),
                tools=tools, model_calls=step.get("llm_call_count"), extra=dict(step.get("extra") or {}))
    unlinked = [r for r in results if r.get("source_call_id") is None and r.get("content") is not None]
    return [turn] + [Turn("user", message=_text(r["content"]), extra={"observation_of_step": step.get("step_id")})
                     for r in unlinked]


def conversation(document: Any, where: str) -> AtifConversation:
    """The turns of an ATIF document (``where`` names it in an error).

    Raises:
        Unreadable: not an ATIF trajectory (the plain check or Harbor's model refused it).
    """
    try:
        _check(document)
        _harbor_check(document)
    except ValueError as exc:
        first = str(exc).strip().splitlines()
        raise Unreadable(f"{where}: not an ATIF trajectory ({'; '.join(first[:3])})") from exc
    turns: list[Turn] = []
    step_ids: list[int] = []
    copied = set()
    for index, step in enumerate(document["steps"], 1):
        step_id = step.get("step_id") if isinstance(step.get("step_id"), int) else index
        made = _step_turns(step)
        turns += made
        step_ids += [step_id] * len(made)
        if step.get("is_copied_context") is True:
            copied.add(step_id)
    agent = document.get("agent") if isinstance(document.get("agent"), dict) else {}
    tools = [t for t in agent.get("tool_definitions") or [] if isinstance(t, dict)]
    model = agent.get("model_name") if isinstance(agent.get("model_name"), str) else None
    return AtifConversation(turns=turns, step_ids=step_ids, copied=frozenset(copied), tools=tools, model=model)


def read(path: Path) -> AtifConversation:
    """The ATIF trajectory at ``path``.

    Raises:
        Unreadable: the file is missing, not JSON, or not an ATIF trajectory.
    """
    document = read_json(path)
    if document is None:
        raise Unreadable(f"{path}: no such file")
    return conversation(document, str(path))
