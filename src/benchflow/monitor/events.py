"""The production event stream ``bench monitor watch`` reads, and the rollouts it is made of.

One JSON object a line, each about one rollout, named by ``rollout`` (a string or an integer):

    {"rollout": "r-17", "event": {"type": "agent_message", "text": "..."}}   one agent event (contracts §3.5)
    {"rollout": "r-17", "exchange": {"request": {...}, "response": {...}}}   one recorded model call
    {"rollout": "r-17", "metadata": {"deployment": "eu-1"}}                 tags kept on its verdict
    {"rollout": "r-17", "end": true}                                         it finished: score it now

A line may carry several of these (an event and ``end``, say); other keys are ignored. Lines of many
rollouts may interleave. A rollout is judged from its events when it has any (the richer record: tool
calls with their results), else from its model calls. A line that breaks these rules is skipped with
a note naming its number and what is wrong; the stream goes on. Every payload is redacted
(:func:`benchflow.util.redact.redact_obj`) as it arrives, before it is kept or shown to a judge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from benchflow.util.redact import redact_obj

from .transcript import Transcript, from_events, from_exchanges

PARTS = ("event", "exchange", "metadata", "end")


@dataclass
class Rollout:
    id: str
    first_line: int
    events: list[dict[str, Any]] = field(default_factory=list)
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "acp" if self.events or not self.exchanges else "llm"

    @property
    def trajectory_name(self) -> str:
        return f"{self.kind}_trajectory.jsonl"

    def lines(self) -> list[dict[str, Any]]:
        return self.events if self.kind == "acp" else self.exchanges

    def transcript(self) -> Transcript:
        """Raises: UserError: no event and no model call answered 200 to judge."""
        from benchflow.errors import UserError

        if self.events:
            return from_events(self.events)
        if self.exchanges:
            return from_exchanges(self.exchanges, f"rollout {self.id}")
        raise UserError(f"rollout {self.id}: no event and no model call came before its end; nothing to judge")


def _problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "not a JSON object"
    rollout = data.get("rollout")
    if isinstance(rollout, bool) or not isinstance(rollout, (str, int)) or rollout == "":
        return "no 'rollout' id (a string or an integer)"
    if not any(key in data for key in PARTS):
        return "none of 'event', 'exchange', 'metadata', 'end'"
    for key in ("event", "exchange", "metadata"):
        if key in data and not isinstance(data[key], dict):
            return f"'{key}' is not a JSON object"
    if "event" in data and not isinstance(data["event"].get("type"), str):
        return "'event' has no 'type'"
    if "end" in data and not isinstance(data["end"], bool):
        return "'end' is not true or false"
    return None


class Collector:
    """Gathers each open rollout's lines until its end."""

    def __init__(self) -> None:
        self.open: dict[str, Rollout] = {}
        self.skipped = 0

    def add(self, number: int, line: bytes) -> tuple[Rollout | None, str | None]:
        """(the rollout this line ended, or None; a note when the line was skipped)."""
        if not line.strip():
            return None, None
        try:
            data: Any = json.loads(line)
        except ValueError:
            data = None
            problem: str | None = "not JSON"
        else:
            problem = _problem(data)
        if problem is not None:
            self.skipped += 1
            return None, f"line {number}: {problem}; skipped"
        key = str(data["rollout"])
        rollout = self.open.setdefault(key, Rollout(key, number))
        if "event" in data:
            rollout.events.append(redact_obj(data["event"]))
        if "exchange" in data:
            rollout.exchanges.append(redact_obj(data["exchange"]))
        if "metadata" in data:
            rollout.metadata.update(redact_obj(data["metadata"]))
        if data.get("end") is True:
            return self.open.pop(key), None
        return None, None

    def take_open(self) -> list[Rollout]:
        """The rollouts the stream left unfinished, in the order they began."""
        left = sorted(self.open.values(), key=lambda r: r.first_line)
        self.open.clear()
        return left
