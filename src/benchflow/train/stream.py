"""``bench train stream``: each finished rollout of a (running) job, once, as a JSON line.

The job folder is scanned when a trial's result lands (file-system
notification, see ``stream_wait``) and at least every ``--poll-interval``
seconds (it may not exist yet). A trial is emitted when its ``result.json`` appears (written atomically,
so it is whole) and never read again. Whether the job is still running comes
from its lock file (``.lock`` holds the running process's pid):

    running   the pid in .lock is alive
    finished  summary.json is there, written after the lock was taken
    stopped   the lock's process is gone and no summary followed (Ctrl-C, kill -9)

Each state check happens *before* the scan it decides on, so a trial that
finished just before the end is still emitted. With ``--group-size N`` records
wait until N of a group have finished, then go out together with their GRPO
advantage; a group with an unscored member, or where some members carry the
token sequence and others do not, is withheld (``--withheld``), as is a group
still short when the stream ends.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from benchflow.errors import UserError
from benchflow.jobs.layout import JobPaths, TrialPaths
from benchflow.util import atomic
from benchflow.util.processes import pid_alive

from . import advantage
from .source import read_rollout
from .stream_wait import SETTLE_SEC, JobWaiter
from .tokens import calls

KIND = "benchflow.rollout-stream.v1"
FINISHED, RUNNING, STOPPED, WAITING = "finished", "running", "stopped", "waiting"


@dataclass
class StreamOptions:
    job_dir: Path
    format: str = "jsonl"
    follow: bool = True
    poll_interval: float = 1.0
    timeout: float | None = None
    group_size: int | None = None
    group_by: str | None = None
    withheld: Path | None = None


def _has_job_marks(path: Path) -> bool:
    return (path / ".lock").exists() or (path / "evaluation.json").is_file() or bool(JobPaths(path).trials())


def resolve_job(path: Path) -> Path | None:
    """The job folder at ``path`` or the one job inside it; None while there is none yet."""
    if not path.exists():
        return None
    if not path.is_dir():
        raise UserError(f"{path}: not a folder; give a job folder or a --jobs-dir holding one job")
    if _has_job_marks(path):
        return path
    jobs = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".") and _has_job_marks(p))
    if len(jobs) > 1:
        raise UserError(f"{path} holds {len(jobs)} jobs ({jobs[0].name}, {jobs[1].name}, …); give one job folder")
    return jobs[0] if jobs else None


def job_state(job: Path | None) -> str:
    if job is None:
        return WAITING
    paths = JobPaths(job)
    try:
        lock = paths.lock.stat()
        text = paths.lock.read_text(encoding="ascii", errors="replace").strip()
    except FileNotFoundError:
        lock, text = None, ""
    if lock is not None and text.isdigit() and pid_alive(int(text)):
        return RUNNING
    try:
        summary = paths.summary.stat()
    except FileNotFoundError:
        summary = None
    if summary is not None and (lock is None or summary.st_mtime_ns >= lock.st_mtime_ns):
        return FINISHED
    return STOPPED if lock is not None and text else WAITING


def record(trial: TrialPaths, job: Path, fields: tuple[str, ...], notes: list[str]) -> dict[str, Any] | None:
    rollout = read_rollout(trial, job.name, trial.name, notes)
    if rollout is None:
        return None
    result = rollout.result
    per_call = calls(trial.llm_trajectory) if trial.llm_trajectory.is_file() else []
    return {"kind": KIND, "schema_version": 1, "schema_minor": 0, "job": job.name, "trial": trial.name,
            "task_name": rollout.task, "agent": rollout.agent, "model": rollout.model,
            "task_digest": rollout.task_digest, "reward": rollout.reward,
            "rewards": result.rewards.model_dump() if result.rewards else None,
            "error": result.error, "error_category": result.error_category,
            "verifier_error": result.verifier_error, "finished_at": result.finished_at,
            "group": advantage.group_id(rollout, fields), "calls": per_call}


def _full_tokens(rec: dict[str, Any]) -> bool:
    return bool(rec["calls"]) and all(c["prompt_token_ids"] and c["sampled_token_ids"] and c["logprobs"]
                                      for c in rec["calls"])


@dataclass
class Grouper:
    """Holds records until their group is complete; decides emit or withhold."""

    size: int
    pending: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    withheld: list[dict[str, Any]] = field(default_factory=list)

    def add(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        members = self.pending.setdefault(rec["group"], [])
        members.append(rec)
        if len(members) < self.size:
            return []
        del self.pending[rec["group"]]
        if any(m["reward"] is None for m in members):
            self._withhold(members, "unscored_member")
            return []
        if len({_full_tokens(m) for m in members}) > 1:
            self._withhold(members, "missing_token_sequence")
            return []
        for member, value in zip(members, advantage.advantages([m["reward"] for m in members], "grpo"),
                                 strict=True):
            member["advantage"] = value
        return members

    def _withhold(self, members: list[dict[str, Any]], reason: str) -> None:
        self.withheld.extend({**m, "withheld_reason": reason} for m in members)

    def finish(self) -> None:
        for members in self.pending.values():
            self._withhold(members, "group_short")
        self.pending.clear()


def _check(o: StreamOptions) -> None:
    if o.format != "jsonl":
        raise UserError(f"--format {o.format!r}: stream writes jsonl only")
    if o.poll_interval <= 0:
        raise UserError("--poll-interval must be more than 0 seconds")
    if o.timeout is not None and o.timeout <= 0:
        raise UserError("--timeout must be more than 0 seconds")
    if o.group_size is not None and o.group_size < 1:
        raise UserError("--group-size must be 1 or more")
    if o.withheld is not None and o.group_size is None:
        raise UserError("--withheld needs --group-size (only grouped streams withhold rollouts)")


def stream(o: StreamOptions, out: TextIO | None = None, err: TextIO | None = None,
           sleep: Callable[[float], None] | None = None) -> int:
    """Run the stream; returns the exit code (0 finished, 1 stopped, 3 timeout)."""
    _check(o)
    waiter = JobWaiter(o.poll_interval, sleep)
    try:
        return _stream(o, out or sys.stdout, err or sys.stderr, waiter)
    finally:
        waiter.close()


def _stream(o: StreamOptions, out: TextIO, err: TextIO, waiter: JobWaiter) -> int:
    fields = advantage.parse_group_by(o.group_by)
    grouper = Grouper(o.group_size) if o.group_size else None
    deadline = None if o.timeout is None else time.monotonic() + o.timeout
    done: set[str] = set()
    pending: set[str] = set()
    notes: list[str] = []
    emitted = withheld_written = 0
    announced = False

    def emit(recs: list[dict[str, Any]]) -> None:
        nonlocal emitted
        for rec in recs:
            out.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
            emitted += 1
        out.flush()

    def save_withheld() -> None:
        nonlocal withheld_written
        if grouper is not None and o.withheld is not None and len(grouper.withheld) != withheld_written:
            atomic.write_jsonl(o.withheld, grouper.withheld)
            withheld_written = len(grouper.withheld)

    def end(code: int, why: str) -> int:
        if grouper is not None:
            grouper.finish()
            save_withheld()
        held = f", {len(grouper.withheld)} withheld" if grouper is not None else ""
        err.write(f"stream: {why}; {emitted} rollout(s) emitted{held}\n")
        return code

    while True:
        job = resolve_job(o.job_dir)
        state = job_state(job)
        if job is None and not announced:
            err.write(f"stream: waiting for {o.job_dir}\n")
            announced = True
        fresh = False  # a trial folder not seen before and not finished yet: look again soon
        for trial in JobPaths(job).trials() if job is not None else []:
            if trial.name in done:
                continue
            if not trial.result.is_file():
                fresh |= trial.name not in pending
                pending.add(trial.name)
                continue
            done.add(trial.name)
            pending.discard(trial.name)
            rec = record(trial, job, fields, notes)
            if rec is not None:
                emit(grouper.add(rec) if grouper is not None else [rec])
        save_withheld()
        err.writelines(f"stream: {note}\n" for note in notes)
        notes.clear()
        if state == FINISHED:
            return end(0, "the job finished")
        if state == STOPPED:
            return end(1, "the job stopped before it finished (its process is gone)")
        if not o.follow:
            return end(0, f"scanned once (job {state})")
        if deadline is not None and time.monotonic() >= deadline:
            return end(3, f"--timeout {o.timeout:g}s reached (job {state})")
        left = o.poll_interval if deadline is None else max(0.0, min(o.poll_interval, deadline - time.monotonic()))
        waiter.wait(job, min(left, SETTLE_SEC) if fresh else left)
