"""The job folder as the database: pick or create it, lock it, and read back what is finished.

Resume trusts only ``result.json``: a task is finished when one of its trial
folders has a result with a reward or a verifier error (a verifier verdict is
final). Trials whose agent phase failed, and folders without a result (a
killed run), are run again in new folders.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchflow.errors import JobFolderError
from benchflow.records import EvaluationRecord, TrialConfig, Unreadable, read_record, write_record
from benchflow.records import read_json as records_json  # noqa: I001 - the name read_json stays this module's
from benchflow.util.redact import drop_secrets

from .layout import JobPaths, TrialPaths, unit_key

if TYPE_CHECKING:
    from benchflow.records.trial import TrialResult

CHANGE_KEYS = ("task_digest", "agent", "model", "reasoning_effort", "sandbox_user", "agent_env",
               "prompts_sha256", "timeout_multiplier", "extra_instruction", "config_override",
               "verifier_sandbox", "skill_mode", "scenes", "loop", "environment_manifest", "codex_apps_policy")
"""Settings a finished trial must share with this run to be reused (``scenes``: the scenes as played, which a
run config's ``scenes`` change without changing the task's digest)."""

CHANGE_DEFAULTS: dict[str, Any] = {"verifier_sandbox": "task", "skill_mode": "no-skill", "scenes": []}
"""What a trial recorded before a key was written ran with (so such trials are still reused)."""


def read_json(path: Path) -> dict[str, Any] | None:
    """A record file as a plain dict (unknown keys kept); None when missing or unreadable."""
    try:
        data = records_json(path)
    except Unreadable:
        return None
    return data if isinstance(data, dict) else None


def _read(model: type, path: Path, name: str | None = None) -> Any:
    """The record at ``path`` through its model; None when missing or unreadable (the trial reruns)."""
    try:
        return read_record(model, path, name=name)
    except Unreadable:
        return None


@dataclass
class JobFolder:
    """An open, locked job folder."""

    paths: JobPaths
    resumed: bool
    finished: dict[str, TrialPaths] = field(default_factory=dict)
    """Task name -> its finished trial."""
    _lock_fd: int | None = None

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def _timestamp_name(root: Path) -> str:
    base = dt.datetime.now().strftime("%Y-%m-%d__%H-%M-%S")
    name, n = base, 1
    while (root / name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def latest_job(root: Path) -> Path | None:
    """The alphabetically last job folder in ``root`` (names are start times)."""
    if not root.is_dir():
        return None
    jobs = [p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith(".") and JobPaths.is_job(p)]
    return jobs[-1] if jobs else None


def choose_job_dir(root: Path, *, job_name: str | None, fresh: bool, identity: dict[str, Any]) -> tuple[Path, str]:
    """(job folder, why) for this run: the named job, a new one, or the latest one to resume."""
    if job_name:
        if "/" in job_name or job_name.startswith("."):
            raise JobFolderError(f"--job-name {job_name!r}: give a plain folder name, not a path")
        return root / job_name, "named"
    if fresh:
        return root / _timestamp_name(root), "fresh"
    latest = latest_job(root)
    if latest is None:
        return root / _timestamp_name(root), "new"
    evaluation = _read(EvaluationRecord, JobPaths(latest).evaluation)
    recorded = evaluation.identity if evaluation is not None else None
    if recorded is not None and recorded != identity:
        return root / _timestamp_name(root), f"new (the latest job {latest.name} ran {recorded})"
    return latest, "resume"


def lock_job(paths: JobPaths) -> int:
    """Take the job's lock, or refuse when a live process holds it."""
    paths.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise JobFolderError(f"job {paths.root} is still running (pid {holder}); wait for it or pick "
                             "another job with --job-name / --fresh") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def scan_finished(paths: JobPaths) -> dict[str, tuple[TrialPaths, TrialResult]]:
    """Task name -> (newest finished trial, its result); finished as ``TrialResult.is_finished`` says."""
    trials = list(paths.trials())
    if not trials:  # a new job: no result model to build
        return {}
    from benchflow.records.trial import TrialResult

    best: dict[str, tuple[TrialPaths, TrialResult, float]] = {}
    for trial in trials:
        result = _read(TrialResult, trial.result, trial.name)
        if result is None or not result.is_finished:
            continue
        task = unit_key(result.task_name, result.seed)
        mtime = trial.result.stat().st_mtime
        if task not in best or mtime > best[task][2]:
            best[task] = (trial, result, mtime)
    return {task: (trial, result) for task, (trial, result, _) in best.items()}


def changed_settings(config: TrialConfig | None, expected: dict[str, Any]) -> list[str]:
    """The CHANGE_KEYS whose recorded value differs from this run's (all of them without a config.json)."""
    recorded = config.to_json() if config is not None else {}
    def was(key: str) -> Any:
        value = recorded.get(key)
        return CHANGE_DEFAULTS.get(key) if value is None else value

    return [key for key in CHANGE_KEYS if key in expected and was(key) != expected[key]]


def open_job(root: Path, *, job_name: str | None, fresh: bool, identity: dict[str, Any],
             expected: dict[str, dict[str, Any]], restart_changed: bool) -> tuple[JobFolder, str]:
    """Open (create or resume) the job folder and work out which tasks are already finished.

    ``expected`` maps task name -> the config values this run would record.

    Raises:
        JobFolderError: still running, or finished trials ran with other settings (without ``restart_changed``).
    """
    job_dir, why = choose_job_dir(root, job_name=job_name, fresh=fresh, identity=identity)
    paths = JobPaths(job_dir)
    resumed = job_dir.is_dir() and any(True for _ in paths.trials())
    fd = lock_job(paths)
    try:
        finished: dict[str, TrialPaths] = {}
        changed: list[tuple[TrialPaths, str, list[str]]] = []
        for task, (trial, _result) in scan_finished(paths).items():
            if task not in expected:
                continue
            diffs = changed_settings(_read(TrialConfig, trial.config, trial.name), expected[task])
            if diffs:
                changed.append((trial, task, diffs))
            else:
                finished[task] = trial
        if changed and not restart_changed:
            first = changed[0]
            raise JobFolderError(
                f"job {job_dir.name}: {len(changed)} finished trial(s) ran with other settings or task files "
                f"(e.g. {first[1]}: {', '.join(first[2])}); rerun with --restart-changed to set them aside "
                "and run them again, or --fresh for a new job")
        for trial, _task, _diffs in changed:
            paths.set_aside.mkdir(exist_ok=True)
            shutil.move(str(trial.root), str(paths.set_aside / trial.name))
    except BaseException:
        os.close(fd)
        raise
    return JobFolder(paths=paths, resumed=resumed, finished=finished, _lock_fd=fd), why


def write_evaluation(job: JobFolder, spec_record: dict[str, Any], identity: dict[str, Any],
                     tasks_dir: str | None) -> None:
    existing = _read(EvaluationRecord, job.paths.evaluation)
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    write_record(job.paths.evaluation, EvaluationRecord(
        job_name=job.paths.name, tasks_dir=tasks_dir, identity=identity,
        created_at=(existing.created_at if existing is not None else None) or now,
        resumed_at=now if job.resumed else None,
        run_config={**spec_record, "agent_env": drop_secrets(spec_record.get("agent_env"))},
    ))
