"""One worker shard: ``python -m benchflow.shards.worker``, started by :mod:`.run`.

It reads one JSON line on stdin (the run spec with this shard's concurrency,
the job folder, the task keys of its shard), plans the run, and schedules the
shard's unfinished tasks into the job folder the parent holds locked. Every
event goes to stdout as one JSON line; anything else the process prints goes
to stderr. The spec travels over the pipe, so agent environment values never
reach a command line or the disk.

Stopping: SIGTERM cancels the shard (every running trial removes its
sandbox), and so does the end of stdin, so a parent that dies takes its
workers with it. Exit 0 when the shard ran to the end, 130 when it was
stopped, 2 on an error before anything ran (the message is a ``worker_error`` event).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

EXIT_STOPPED = 130
EXIT_REFUSED = 2


def _event_writer(stream: TextIO) -> Any:
    def emit(event: dict[str, Any]) -> None:
        stream.write(json.dumps(event, default=str) + "\n")
        stream.flush()

    return emit


def _cancel_on_eof(task: asyncio.Task) -> None:
    """Cancel ``task`` once stdin ends (the parent closed it, or died); a daemon thread watches."""
    loop = asyncio.get_running_loop()

    def watch() -> None:
        while sys.stdin.readline():
            pass
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nothing left to stop
            loop.call_soon_threadsafe(task.cancel)

    threading.Thread(target=watch, name="benchflow-worker-stdin", daemon=True).start()


async def _work(message: dict[str, Any], emit: Any) -> None:
    from benchflow import agents

    from benchflow.jobs.api import resolve_ca_bundle, run_units
    from benchflow.jobs.job import scan_finished
    from benchflow.jobs.layout import JobPaths
    from benchflow.jobs.plan import make_plan
    from benchflow.jobs.spec import RunSpec

    spec = RunSpec.model_validate(message["spec"])
    paths = JobPaths(Path(message["job_dir"]))
    keys = set(message["keys"])
    plan = make_plan(spec)
    finished = scan_finished(paths)
    todo = [t for t in plan.units if t.key in keys and t.key not in finished]
    agent = agents.resolve(spec.agent, harness=spec.harness)
    plan.backend.set_build_concurrency(spec.build_concurrency or spec.concurrency)
    _cancel_on_eof(asyncio.current_task())
    from .ledger import Ledger

    await run_units(spec, plan, paths, todo, agent, resolve_ca_bundle(spec.ca_bundle), emit,
                    retry_slots=message.get("retry_slots"), ledger=Ledger(Path(message["budget_ledger"])))


def main() -> int:
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print lands on stderr, never inside the event stream
    emit = _event_writer(events)
    from benchflow.errors import BenchError

    try:
        message = json.loads(sys.stdin.readline())
        asyncio.run(_work(message, emit))
    except (KeyboardInterrupt, asyncio.CancelledError):
        return EXIT_STOPPED
    except BenchError as exc:
        emit({"type": "worker_error", "category": exc.category, "message": str(exc)})
        return EXIT_REFUSED
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # the shard is done and cleaned up; an engine stream thread stuck on a dead socket cannot hold it
