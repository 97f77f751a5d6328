"""``trajectory/acp_trajectory.jsonl``: live append, merged rewrite (contracts §3.5).

Agents emit raw events as they arrive: message and thought *chunks*,
``tool_call`` starts and ``tool_call_update`` patches. :class:`TrajectoryMerger`
folds them into the stored shape: consecutive chunks of one type become one
event, and a tool call is one event updated in place. :class:`AcpTrajectoryFile`
appends every raw event (redacted) to the file the moment it happens, so a
crash keeps what was done, and ``close()`` rewrites the file atomically with
the merged events.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from benchflow.util.atomic import PRIVATE, write_jsonl
from benchflow.util.redact import redact_obj

CHUNK_TYPES = ("agent_message", "agent_thought", "user_message")
_TOOL_FIELDS = ("title", "kind", "status", "content", "locations", "raw_input", "raw_output")


class TrajectoryMerger:
    """Folds raw events into merged ones; also counts what the outcome reports."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._tool_index: dict[str, int] = {}
        self._open_chunk: str | None = None
        """Type of the last event when it is a chunk that the next same-type chunk extends."""
        self.n_message_chunks = 0
        self.n_thought_chunks = 0

    @property
    def n_tool_calls(self) -> int:
        return len(self._tool_index)

    def pending_tool_call_ids(self) -> list[str]:
        """Tool calls started but not finished (status pending or in_progress)."""
        return [tid for tid, i in self._tool_index.items()
                if self.events[i].get("status") in ("pending", "in_progress", None)]

    def last_reply(self) -> str:
        """The agent's message text since the last prompt (``user_message``)."""
        parts: list[str] = []
        for event in reversed(self.events):
            if event.get("type") == "user_message":
                break
            if event.get("type") == "agent_message":
                parts.append(str(event.get("text", "")))
        return "".join(reversed(parts))

    def add(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind in CHUNK_TYPES:
            self._add_chunk(kind, event)
        elif kind == "tool_call":
            self._start_tool(event)
        elif kind == "tool_call_update":
            self._update_tool(event)
        else:
            self._open_chunk = None
            self.events.append(dict(event))

    def _add_chunk(self, kind: str, event: Mapping[str, Any]) -> None:
        if kind == "agent_message":
            self.n_message_chunks += 1
        elif kind == "agent_thought":
            self.n_thought_chunks += 1
        # user messages are whole prompts: never merged into each other
        if self._open_chunk == kind and kind != "user_message":
            self.events[-1]["text"] = self.events[-1].get("text", "") + event.get("text", "")
            return
        self.events.append({"type": kind, "text": event.get("text", "")})
        self._open_chunk = kind

    def _start_tool(self, event: Mapping[str, Any]) -> None:
        self._open_chunk = None
        tool_id = str(event.get("tool_call_id"))
        if tool_id in self._tool_index:  # a repeated start is an update
            self._update_tool(event)
            return
        self._tool_index[tool_id] = len(self.events)
        self.events.append({"type": "tool_call", **{k: v for k, v in event.items() if k != "type"}})

    def _update_tool(self, event: Mapping[str, Any]) -> None:
        tool_id = str(event.get("tool_call_id"))
        if tool_id not in self._tool_index:  # an update for a call never started: keep it as a call
            self._start_tool({**event, "type": "tool_call"})
            return
        target = self.events[self._tool_index[tool_id]]
        for key in _TOOL_FIELDS:
            if event.get(key) is not None:
                target[key] = event[key]


class AcpTrajectoryFile:
    """A :class:`~benchflow.agents.base.TrajectorySink` writing ``acp_trajectory.jsonl``.

    ``emit`` appends one redacted raw line at once; ``close`` rewrites the file
    with the merged events (atomic). Emitting after ``close`` appends again and
    the next ``close`` rewrites again.
    """

    def __init__(self, path: Path, secret_values: list[str] | tuple[str, ...] = ()) -> None:
        self.path = Path(path)
        self.merger = TrajectoryMerger()
        self._secrets = tuple(v for v in secret_values if v)
        self._handle: IO[str] | None = None

    def add_secrets(self, values: list[str] | tuple[str, ...]) -> None:
        """More exact values to mask (the agent's keys, known only at launch)."""
        self._secrets = tuple(dict.fromkeys((*self._secrets, *(v for v in values if v))))

    def emit(self, event: Mapping[str, Any]) -> None:
        clean = redact_obj(dict(event), self._secrets)
        self.merger.add(clean)
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
            self._handle = os.fdopen(fd, "a", encoding="utf-8")
        self._handle.write(json.dumps(clean, ensure_ascii=False, default=str) + "\n")
        self._handle.flush()

    def close(self) -> None:
        """Rewrite the file with the merged events (nothing is written when nothing was emitted)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            write_jsonl(self.path, self.merger.events, PRIVATE)
