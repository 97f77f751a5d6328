"""A Harbor trial's ATIF steps as the ACP events the trial page draws (contracts §3.5's event shape).

A trial folder without ``trajectory/acp_trajectory.jsonl`` whose agent wrote an ATIF trajectory
(``agent/trajectory.json``, a Harbor trial) shows its steps in the Trajectory tab: read as turns by
:mod:`benchflow.interop.atif_read` (the reader ``bench train convert`` uses), each turn becomes the events a
BenchFlow trial records for it: a ``user`` step a ``user_message``, a ``system`` step a ``system_message``,
an ``agent`` step its ``agent_thought`` (reasoning), ``agent_message`` and one ``tool_call`` per call
(``kind`` and ``title`` the function's name unless the call's ``extra`` names them, ``raw_input`` its
arguments, ``raw_output`` its result, ``status`` failed / completed / pending). A file that is not ATIF is
one event saying why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchflow.interop import atif_read
from benchflow.interop.turns import ToolUse, Turn
from benchflow.jobs.layout import TrialPaths
from benchflow.records import Unreadable


def _tool_call(tool: ToolUse) -> dict[str, Any]:
    status = tool.extra.get("status")
    if not isinstance(status, str):
        status = "failed" if tool.failed else "pending" if tool.output is None else "completed"
    event: dict[str, Any] = {"type": "tool_call", "tool_call_id": tool.id, "kind": tool.extra.get("kind") or tool.name,
                             "title": tool.extra.get("title") or tool.name, "status": status,
                             "raw_input": tool.arguments}
    if tool.output is not None:
        event["raw_output"] = tool.output
    return event


def _events(turn: Turn) -> list[dict[str, Any]]:
    if turn.source != "agent":
        return [{"type": f"{turn.source}_message", "text": turn.message}]
    events = [{"type": "agent_thought", "text": turn.reasoning}] if turn.reasoning else []
    if turn.message or not (events or turn.tools):
        events.append({"type": "agent_message", "text": turn.message})
    return events + [_tool_call(tool) for tool in turn.tools]


def atif_events(trial: Path) -> list[dict[str, Any]] | None:
    """The events of the trial's ATIF trajectory; None when it has its own ACP trajectory or no ATIF file."""
    paths = TrialPaths(trial)
    if paths.acp_trajectory.exists() or not paths.atif_trajectory.is_file():
        return None
    try:
        turns = atif_read.read(paths.atif_trajectory).turns
    except Unreadable as exc:
        return [{"type": "atif_unreadable", "text": str(exc)}]
    return [event for turn in turns for event in _events(turn)]
