"""Wall-clock and idle watchdogs for one agent phase (contracts §3.9, §3.12).

The watchdog only *decides*: it polls, and when a budget is spent it records
why and returns, so the runtime can send ``session/cancel``, give the agent a
moment, then kill it. Activity is a tool call, a message chunk or a thought
chunk; while a tool call is in flight the agent counts as busy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


def default_idle_timeout_sec(effort: str | None) -> float:
    """``--agent-idle-timeout`` default: 10 minutes, 30 at effort xhigh/max (long silent thinking)."""
    return 1800.0 if effort in ("xhigh", "max") else 600.0


def poll_interval(idle_timeout_sec: float | None, timeout_sec: float | None) -> float:
    """``max(1, min(30, idle/4, timeout/4))`` seconds, over the budgets that are set."""
    candidates = [30.0] + [b / 4 for b in (idle_timeout_sec, timeout_sec) if b]
    return max(1.0, min(candidates))


@dataclass
class Activity:
    """What the agent has done so far; the ACP client updates it as events arrive."""

    n_tool_calls: int = 0
    n_message_chunks: int = 0
    n_thought_chunks: int = 0
    pending_tool_call_ids: Callable[[], list[str]] = lambda: []
    started_at: float = field(default_factory=time.monotonic)
    last_activity: float = field(default_factory=time.monotonic)
    last_activity_wall: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def touch(self) -> None:
        self.last_activity = time.monotonic()
        self.last_activity_wall = datetime.now(timezone.utc)


@dataclass
class Trip:
    """Why the watchdog fired: ``kind`` is ``wall_clock`` or ``idle``; ``info`` is the result.json block."""

    kind: str
    error: str
    info: dict[str, Any]


class Watchdog:
    """Watches one :class:`Activity` against a wall-clock and an idle budget (None or 0: off)."""

    def __init__(self, activity: Activity, *, timeout_sec: float | None, idle_timeout_sec: float | None,
                 clock: Callable[[], float] = time.monotonic,
                 should_stop: Callable[[], str | None] | None = None) -> None:
        self.activity = activity
        self.timeout_sec = timeout_sec or None
        self.idle_timeout_sec = idle_timeout_sec or None
        self._clock = clock
        self._should_stop = should_stop

    def check(self) -> Trip | None:
        """The trip now due, if any (wall clock first)."""
        now = self._clock()
        act = self.activity
        reason = self._should_stop() if self._should_stop else None
        if reason:
            return Trip("stop", f"Agent stopped: {reason} spent", {"reason": reason,
                                                                   "n_tool_calls": act.n_tool_calls})
        elapsed = now - act.started_at
        pending = act.pending_tool_call_ids()
        if self.timeout_sec and elapsed >= self.timeout_sec:
            budget = _fmt(self.timeout_sec)
            return Trip("wall_clock", f"Agent prompt exceeded wall-clock budget {budget}s", {
                "reason": "wall_clock_timeout", "timeout_sec": self.timeout_sec,
                "n_tool_calls": act.n_tool_calls, "pending_tool_call_ids": pending,
                "terminal_event_recorded": False, "terminal_trajectory_complete": False,
            })
        idle = now - act.last_activity
        if self.idle_timeout_sec and idle >= self.idle_timeout_sec and not pending:
            return Trip("idle", (
                f"Agent idle for {_fmt(idle)}s with no new tool call, message, or thought "
                f"(idle timeout {_fmt(self.idle_timeout_sec)}s)"), {
                "reason": "idle_timeout", "idle_timeout_sec": self.idle_timeout_sec,
                "idle_duration_sec": round(idle, 3), "wall_clock_elapsed_sec": round(elapsed, 3),
                "n_tool_calls": act.n_tool_calls, "n_message_chunks": act.n_message_chunks,
                "n_thought_chunks": act.n_thought_chunks,
                "last_activity_at": act.last_activity_wall.isoformat(),
            })
        return None

    async def wait_for_trip(self) -> Trip:
        """Poll until a budget is spent; never returns when both are off (cancel it)."""
        interval = poll_interval(self.idle_timeout_sec, self.timeout_sec)
        if self._should_stop is not None:
            interval = min(interval, 0.5)  # a spent budget stops the agent promptly
        while True:
            trip = self.check()
            if trip is not None:
                return trip
            remaining = (self.activity.started_at + self.timeout_sec - self._clock()) if self.timeout_sec else interval
            await asyncio.sleep(max(0.05, min(interval, remaining)))


def _fmt(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() or seconds >= 10 else f"{seconds:.1f}"
