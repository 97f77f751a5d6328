"""How a run looks on the terminal: a live Rich dashboard on a TTY, plain lines otherwise.

The library reports events; this module turns them into output. ``--quiet``
prints only warnings, errors and the final score.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

HEARTBEAT_SEC = 30.0


def _reward(result: dict[str, Any]) -> str:
    reward = (result.get("rewards") or {}).get("reward")
    if result.get("verifier_error"):
        return f"verifier error ({result.get('verifier_error_category')})"
    if reward is None:
        return f"error ({result.get('error_category')})"
    suffix = f" [{result.get('error_category')}]" if result.get("error_category") else ""
    return f"reward {reward:g}{suffix}"


class RunView:
    """Receives run events; renders progress to stderr."""

    def __init__(self, quiet: bool = False, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.quiet = quiet
        self.live_mode = self.console.is_terminal and not quiet
        self.states: dict[str, str] = {}
        self.total = 0
        self.done = 0
        self.started = time.monotonic()
        self.last_beat = self.started
        self.live: Live | None = None

    def __enter__(self) -> "RunView":
        if self.live_mode:
            self.live = Live(self._table(), console=self.console, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)
            self.live = None

    def _say(self, text: str) -> None:
        if self.quiet:
            return
        if self.live is not None:
            self.live.console.print(escape(text))
        else:
            self.console.print(escape(text))

    def _table(self) -> Table:
        elapsed = time.monotonic() - self.started
        eta = ""
        if self.done and self.total > self.done:
            eta = f", ETA {elapsed / self.done * (self.total - self.done):.0f}s"
        table = Table(title=f"{self.done}/{self.total} done, {elapsed:.0f}s elapsed{eta}", expand=False)
        table.add_column("task")
        table.add_column("state")
        for task, state in list(self.states.items())[-20:]:
            table.add_row(task, state)
        return table

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "job_started":
            self.total = event["total"]
            self.done = event["reused"]
            self.states = {name: "queued" for name in event["todo"]}
            self._say(f"Job {event['job_dir']} ({event['why']}); sandbox {event['sandbox']} "
                      f"[{event['sandbox_reason']}]; agent {event['agent']}; "
                      f"{len(event['todo'])} to run, {event['reused']} reused")
        elif kind == "phase":
            task = event["trial"].rsplit("__", 1)[0]
            self.states[task] = event["phase"]
        elif kind == "trial_finished":
            result = event["result"]
            line = f"{event['task']}: {_reward(result)} in {result['timing'].get('total', 0):.1f}s"
            if event["will_retry"]:
                line += " — will retry"
            else:
                self.done += 1
            self.states[event["task"]] = _reward(result)
            self._say(line)
        elif kind == "retry":
            self._say(f"{event['task']}: retry {event['attempt']} in {event['delay_sec']:g}s")
        elif kind in {"not_started", "trial_cancelled"}:
            self.states[event["task"]] = f"{kind.replace('_', ' ')} ({event['reason']})"
            self.console.print(f"[yellow]warning:[/] {escape(event['task'])}: {kind.replace('_', ' ')} "
                               f"({escape(str(event['reason']))})")
        if self.live is not None:
            self.live.update(self._table())
        elif not self.quiet and time.monotonic() - self.last_beat >= HEARTBEAT_SEC:
            self.last_beat = time.monotonic()
            running = sum(1 for s in self.states.values() if s in {"build", "start", "install", "agent", "verifier"})
            self.console.print(f"… {self.done}/{self.total} done, {running} running, "
                               f"{time.monotonic() - self.started:.0f}s elapsed")


def print_final(outcome: Any, console: Console | None = None) -> None:
    """The end-of-run lines; printed even with --quiet."""
    out = console or Console(highlight=False)
    s = outcome.summary
    out.print(outcome.outcomes_line)
    mean = "n/a" if s["mean_reward"] is None else f"{s['mean_reward']:.3f}"
    out.print(f"Score: {s['score']} ({s['passed']}/{s['total']} passed), mean reward {mean}")
    out.print(f"Job: {outcome.job_dir}")
    for reason in outcome.gate.get("reasons", []):
        print(f"exit 1: {reason}", file=sys.stderr)
