"""``bench monitor watch``: score each rollout of a live event stream (:mod:`.events`) as it finishes.

The stream is standard input (``-``, read until it closes) or a file being appended: read from its
start, then followed (looked at every :data:`POLL_SEC`; a file truncated or replaced by log rotation is
read again from its start) until Ctrl-C, or with ``follow=False`` read to its current end.

When a rollout's ``end`` line arrives, its folder and trajectory are written at once, then a judge
scores it (up to ``concurrency`` at a time, one model gateway for the whole watch) and its verdict is
written whole and reported. Nothing is lost when the watch stops: at the end of the input the verdicts
still being made are waited for; on Ctrl-C or SIGTERM they are cancelled and each gets an
``interrupted`` verdict. Either way every rollout the stream began but never ended gets its trajectory
and an ``unfinished`` verdict, and ``monitor-run.json`` gets the counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError, Interrupted, UserError
from benchflow.util import atomic

from .events import Collector, Rollout
from .judge import Judged
from .rubric import Scoring
from .score import MonitorOptions, prepare, score_one
from .verdict import now, open_run, rollout_folder, run_record, verdict, write_run_record, write_verdict

POLL_SEC = 0.2
"""How often a followed file is looked at again once its end is reached."""
STDIN = "-"


async def stdin_lines() -> AsyncIterator[bytes]:
    """Standard input's lines, read by a daemon thread (a blocked read never holds up the exit)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def pump() -> None:
        while True:
            line = sys.stdin.buffer.readline()
            try:
                loop.call_soon_threadsafe(queue.put_nowait, line or None)
            except RuntimeError:  # the loop closed (the watch stopped): nobody reads the rest
                return
            if not line:
                return

    threading.Thread(target=pump, name="monitor-stdin", daemon=True).start()
    while (line := await queue.get()) is not None:
        yield line


async def file_lines(path: Path, follow: bool, note: Callable[[str], None]) -> AsyncIterator[bytes]:
    """The lines of ``path``; with ``follow``, also those appended later (a line counts once it ends)."""
    handle = open(path, "rb")
    inode, partial = os.fstat(handle.fileno()).st_ino, b""
    try:
        while True:
            chunk = handle.read(1 << 16)
            if chunk:
                *whole, partial = (partial + chunk).split(b"\n")
                for line in whole:
                    yield line
                continue
            if not follow:
                if partial:
                    yield partial
                return
            await asyncio.sleep(POLL_SEC)
            try:
                stat = os.stat(path)
            except FileNotFoundError:  # rotated away: its successor is read once it appears
                continue
            if stat.st_ino != inode:
                handle.close()
                handle = open(path, "rb")
                inode, partial = os.fstat(handle.fileno()).st_ino, b""
                note(f"{path} was replaced; reading the new file from its start")
            elif stat.st_size < handle.tell():
                handle.seek(0)
                partial = b""
                note(f"{path} was truncated; reading it again from its start")
    finally:
        handle.close()


class Watch:
    """One watch of one stream into the run folder ``run``."""

    def __init__(self, source: str, run: Path, scoring: Scoring, options: MonitorOptions, env: Mapping[str, str], *,
                 follow: bool, concurrency: int, on_verdict: Callable[[dict[str, Any]], None],
                 on_note: Callable[[str], None]) -> None:
        self.source, self.run, self.scoring, self.options, self.env = source, run, scoring, options, env
        self.follow, self.on_verdict, self.on_note = follow, on_verdict, on_note
        self.slots = asyncio.Semaphore(concurrency)
        self.collector = Collector()
        self.counts: Counter[str] = Counter()
        self.tasks: set[asyncio.Task[None]] = set()
        self.failed: list[BaseException] = []
        """What a scoring task raised that is not a judge's failure (a bug, a disk error): it ends the watch."""
        self.started = now()

    def _record(self, counts: dict[str, int] | None = None, stopped_by: str | None = None) -> None:
        write_run_record(self.run, run_record(command="watch", run=self.run, source=self.source, scoring=self.scoring,
                                              alert_below=self.options.alert_below, started_at=self.started,
                                              counts=counts, stopped_by=stopped_by))

    def _lines(self) -> AsyncIterator[bytes]:
        if self.source == STDIN:
            return stdin_lines()
        return file_lines(Path(self.source), self.follow, self.on_note)

    def _verdict(self, rollout: Rollout, folder: Path, status: str | None,
                 judged: Judged | None = None) -> dict[str, Any]:
        return verdict(run=self.run, folder=folder, rollout=rollout.id, status=status, scoring=self.scoring,
                       judged=judged,
                       source={"kind": rollout.kind, "stream": self.source,
                               "path": str(folder / rollout.trajectory_name)},
                       trajectory={"kind": rollout.kind, "lines": len(rollout.lines())},
                       metadata=rollout.metadata, alert_below=self.options.alert_below, started_at=now())

    def _emit(self, document: dict[str, Any]) -> None:
        self.counts["rollouts"] += 1
        self.counts[document["status"]] += 1
        self.counts["alerts"] += int(document["alert"])
        self.on_verdict(document)

    def _keep(self, rollout: Rollout) -> Path:
        folder = rollout_folder(self.run, rollout.id)
        atomic.write_jsonl(folder / rollout.trajectory_name, rollout.lines())
        return folder

    async def _score(self, rollout: Rollout, folder: Path, gateway: Any) -> None:
        try:
            async with self.slots:
                try:
                    transcript = rollout.transcript()
                except UserError as exc:
                    document = self._verdict(rollout, folder, None,
                                             Judged(error=str(exc), error_category="unreadable_trajectory"))
                    write_verdict(folder, document)
                else:
                    document = await score_one(
                        transcript, self.scoring, env=self.env, run=self.run, folder=folder, rollout=rollout.id,
                        source={"kind": transcript.kind, "stream": self.source,
                                "path": str(folder / rollout.trajectory_name)},
                        alert_below=self.options.alert_below, gateway=gateway, metadata=rollout.metadata)
        except asyncio.CancelledError:
            document = self._verdict(rollout, folder, "interrupted")
            write_verdict(folder, document)
            self._emit(document)
            raise
        self._emit(document)

    async def watch(self) -> dict[str, int]:
        from benchflow.gateway import Upstreams
        from benchflow.util.signals import sigterm_cancels_current_task
        from benchflow.verify.judge_model import private_gateway

        self._record()
        stopped_by = "interrupted"
        try:
            with sigterm_cancels_current_task():
                async with private_gateway(Upstreams.from_env(self.env)) as gateway:
                    ended = False
                    try:
                        await self._follow(gateway)
                        ended = True
                    finally:  # at the end of the input the verdicts being made are awaited, else cancelled
                        for task in [] if ended else list(self.tasks):
                            task.cancel()
                        await asyncio.gather(*self.tasks, return_exceptions=True)
                    self._raise_failure()
                    stopped_by = "end_of_input"
        except Exception:  # recorded as how the watch stopped, then raised as it is
            stopped_by = "failed"
            raise
        finally:
            for rollout in self.collector.take_open():
                folder = self._keep(rollout)
                document = self._verdict(rollout, folder, "unfinished")
                write_verdict(folder, document)
                self._emit(document)
            counts = {k: self.counts[k] for k in ("rollouts", "scored", "alerts", "error", "verifier_error",
                                                  "unfinished", "interrupted")}
            counts["skipped_lines"] = self.collector.skipped
            self._record(counts, stopped_by)
            self.on_note(f"{stopped_by.replace('_', ' ')}: {counts['rollouts']} rollout(s), {counts['scored']} "
                         f"scored ({counts['alerts']} alert), {counts['error'] + counts['verifier_error']} not scored, "
                         f"{counts['unfinished']} unfinished, {counts['interrupted']} interrupted, "
                         f"{counts['skipped_lines']} line(s) skipped; verdicts in {self.run}")
        return counts

    async def _follow(self, gateway: Any) -> None:
        async with contextlib.aclosing(self._lines()) as lines:
            async for number, line in _numbered(lines):
                rollout, note = self.collector.add(number, line)
                if note is not None:
                    self.on_note(note)
                if rollout is not None:
                    task = asyncio.create_task(self._score(rollout, self._keep(rollout), gateway))
                    self.tasks.add(task)
                    task.add_done_callback(self._done)
                self._raise_failure()

    def _done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.failed.append(task.exception())

    def _raise_failure(self) -> None:
        if self.failed:
            raise self.failed[0]


async def _numbered(lines: AsyncIterator[bytes]) -> AsyncIterator[tuple[int, bytes]]:
    number = 0
    async for line in lines:
        number += 1
        yield number, line


def watch(source: str, options: MonitorOptions, *, follow: bool = True, concurrency: int = 4,
          env: Mapping[str, str] | None = None, on_verdict: Callable[[dict[str, Any]], None],
          on_note: Callable[[str], None]) -> dict[str, int]:
    """Watch ``source`` (``-``: standard input) until its end or Ctrl-C; returns the counts.

    Raises:
        UserError: a source that is not a file, a bad option (before anything is written).
        KeyboardInterrupt: Ctrl-C, after every verdict and ``monitor-run.json`` are written.
    """
    env = os.environ if env is None else env
    if concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency}: give 1 or more")
    if source != STDIN:
        path = Path(source)
        if not path.exists():
            raise UserError(f"{source}: no such file; give a JSONL file being appended, or - for standard input")
        if path.is_dir():
            raise UserError(f"{source}: a folder; give a JSONL file being appended, or - for standard input")
    scoring = prepare(options, env)
    run = open_run(options.jobs_dir, options.run_name)

    async def main() -> dict[str, int]:
        return await Watch(source, run, scoring, options, env, follow=follow, concurrency=concurrency,
                           on_verdict=on_verdict, on_note=on_note).watch()

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:  # SIGTERM (Ctrl-C comes out of asyncio.run as KeyboardInterrupt)
        raise Interrupted("bench monitor watch: stopped by SIGTERM; every verdict made is written") from None
