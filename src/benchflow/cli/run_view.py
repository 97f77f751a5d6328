"""How a run looks on the terminal: a live Rich dashboard on a TTY, plain lines otherwise.

The library reports events; this module turns them into output. ``--quiet``
prints only warnings, errors and the final score. Rich is imported only when
output goes to a terminal (or ``FORCE_COLOR`` asks for it): a run whose output
is piped or logged pays nothing for it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

HEARTBEAT_SEC = 30.0


class PlainConsole:
    """The part of Rich's ``Console`` this view uses, for output that is not a terminal: text as is
    (no markup, no wrapping)."""

    is_terminal = False

    def __init__(self, stderr: bool = False) -> None:
        self.stderr = stderr

    def print(self, text: str, **_: Any) -> None:
        print(text, file=sys.stderr if self.stderr else sys.stdout, flush=self.stderr)


def _fancy(stream: Any) -> bool:
    return stream.isatty() or bool(os.environ.get("FORCE_COLOR"))


def _console(stderr: bool) -> Any:
    if not _fancy(sys.stderr if stderr else sys.stdout):
        return PlainConsole(stderr=stderr)
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def _escape(console: Any, text: str) -> str:
    if isinstance(console, PlainConsole):
        return text
    from rich.markup import escape

    return escape(text)


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

    def __init__(self, quiet: bool = False, console: Any = None) -> None:
        self.console = console or _console(stderr=True)
        self.quiet = quiet
        self.live_mode = self.console.is_terminal and not quiet
        self.states: dict[str, str] = {}
        self.total = 0
        self.done = 0
        self.started = time.monotonic()
        self.last_beat = self.started
        self.live: Any = None

    def __enter__(self) -> "RunView":
        if self.live_mode:
            from rich.live import Live

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
            self.live.console.print(_escape(self.console, text))
        else:
            self.console.print(_escape(self.console, text))

    def _table(self) -> Any:
        from rich.table import Table

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
            for note in event.get("notes", ()):
                warning = "warning:" if isinstance(self.console, PlainConsole) else "[yellow]warning:[/]"
                self.console.print(f"{warning} {_escape(self.console, note)}")
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
        elif kind == "workers_started":
            self._say(f"{event['workers']} worker(s), at most {max(event['concurrency'])} trial(s) each")
        elif kind == "worker_exited":
            then = f"retrying its {event['unfinished']} unfinished task(s)" if event["will_retry"] else \
                f"{event['unfinished']} task(s) left unfinished"
            how = f"was killed (signal {-event['code']})" if event["code"] < 0 else f"exited with code {event['code']}"
            self.console.print(f"warning: worker {event['worker']} {how}; {then}", markup=False)
        elif kind == "worker_error":
            self.console.print(f"error: worker {event.get('worker')}: {event['message']}", markup=False)
        elif kind == "output_written":
            self._say(f"{event['what']}: {event['path']}")
        elif kind == "retry":
            self._say(f"{event['task']}: retry {event['attempt']} in {event['delay_sec']:g}s")
        elif kind in {"not_started", "trial_cancelled"}:
            self.states[event["task"]] = f"{kind.replace('_', ' ')} ({event['reason']})"
            warning = "warning:" if isinstance(self.console, PlainConsole) else "[yellow]warning:[/]"
            self.console.print(f"{warning} {_escape(self.console, event['task'])}: {kind.replace('_', ' ')} "
                               f"({_escape(self.console, str(event['reason']))})")
        if self.live is not None:
            self.live.update(self._table())
        elif not self.quiet and time.monotonic() - self.last_beat >= HEARTBEAT_SEC:
            self.last_beat = time.monotonic()
            running = sum(1 for s in self.states.values() if s in {"build", "start", "install", "agent", "verifier"})
            self.console.print(f"… {self.done}/{self.total} done, {running} running, "
                               f"{time.monotonic() - self.started:.0f}s elapsed")


def print_final(outcome: Any, console: Any = None) -> None:
    """The end-of-run lines; printed even with --quiet."""
    out = console or _console(stderr=False)
    s = outcome.summary
    out.print(outcome.outcomes_line)
    mean = "n/a" if s["mean_reward"] is None else f"{s['mean_reward']:.3f}"
    out.print(f"Score: {s['score']} ({s['passed']}/{s['total']} passed), mean reward {mean}")
    out.print(f"Job: {outcome.job_dir}")
    for reason in outcome.gate.get("reasons", []):
        print(f"exit 1: {reason}", file=sys.stderr)
