"""``bench regrade``: score finished trials again with the task's current verifier.

Each trial whose workspace was frozen (``--freeze-workspace``) is regraded in a
fresh sandbox (:mod:`.regrade_trial`); the new score goes to ``regrade.json``
beside the trial and the batch to ``regrade-summary.json`` in PATH.
``result.json`` is only ever read. A trial that cannot be regraded (unfinished,
no frozen workspace, task folder gone, evidence altered) is listed with the
reason instead. The job's lock is held for the whole regrade, so a run cannot
resume the job (and write into its trials) meanwhile.

Exit codes (:func:`exit_code`): 0 when at least one trial was regraded and no
regrade errored; 1 when nothing could be regraded or a regrade ended without a
score (sandbox, restore or verifier error, or with ``--review`` a reviewer
error); bad PATH or flags exit 2 before any sandbox starts; Ctrl-C exits 130
with every sandbox removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Callable

from benchflow.errors import ConfigError, Interrupted, JobFolderError, TaskError
from benchflow.jobs.layout import JobPaths, TrialPaths, is_harbor_job
from benchflow.records import (
    EvaluationRecord,
    TrialConfig,
    TrialResult,
    Unreadable,
    read_record,
)
from benchflow.util import atomic
from benchflow.util.signals import sigterm_cancels_current_task

from .reader import (
    find_jobs,
    is_job_dir,
    is_trial_dir,
    reward_of,
)
from .regrade_trial import Candidate, evidence_problem, regrade_trial

SCHEMA_VERSION = 1
KIND = "benchflow.regrade-summary"
DEFAULT_CONCURRENCY = 4


def regrade(path: str | Path, *, tasks_dir: str | Path | None = None, sandbox: str | None = None,
            concurrency: int = DEFAULT_CONCURRENCY, reason: str | None = None,
            on_row: Callable[[dict[str, Any]], None] | None = None,
            allow_task_env: Iterable[str] = (), review: dict[str, Any] | None = None) -> dict[str, Any]:
    """Regrade the job or trial folder at ``path``; returns the ``regrade-summary.json`` document.

    ``allow_task_env`` names the host variables the current tasks may read, as for ``bench run``.
    ``review`` (``--review``: the ``--reviewer-*`` changes, possibly empty) also reruns each regraded trial's
    rubric review gated by the new test (:mod:`benchflow.review.regrade`, the review feature's ``after_regrade``).

    Raises:
        JobFolderError: ``path`` is not a job or trial folder, or the job is locked (running or regrading).
        ConfigError: a bad ``--tasks-dir``, ``--sandbox`` or ``--concurrency``.
        TaskError: a task reads a host variable ``allow_task_env`` does not name.
        Interrupted: Ctrl-C / SIGTERM (sandboxes already removed; no summary written).
    """
    try:
        return asyncio.run(regrade_async(path, tasks_dir=tasks_dir, sandbox=sandbox, concurrency=concurrency,
                                         reason=reason, on_row=on_row, allow_task_env=allow_task_env,
                                         review=review))
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise Interrupted("interrupted: running regrades were cancelled and their sandboxes removed; "
                          "regrade.json files already written are kept") from None


async def regrade_async(path: str | Path, *, tasks_dir: str | Path | None = None, sandbox: str | None = None,
                        concurrency: int = DEFAULT_CONCURRENCY, reason: str | None = None,
                        on_row: Callable[[dict[str, Any]], None] | None = None,
                        allow_task_env: Iterable[str] = (), review: dict[str, Any] | None = None) -> dict[str, Any]:
    if concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency}: give 1 or more")
    root, trials = trials_of(Path(path).expanduser())
    index = _task_index(Path(tasks_dir).expanduser()) if tasks_dir is not None else None
    with _job_lock(root):
        return await _regrade_locked(root, trials, index, tasks_dir=tasks_dir, sandbox=sandbox,
                                     concurrency=concurrency, reason=reason, on_row=on_row,
                                     allowed=list(allow_task_env), review=review)


@contextlib.contextmanager
def _job_lock(root: Path) -> Iterator[None]:
    """Hold the lock of the job ``root`` is (or is a trial of) while the block runs."""
    from benchflow.jobs.job import lock_job

    job = JobPaths(root.parent) if is_trial_dir(root) else JobPaths(root)
    try:
        fd = lock_job(job)
    except JobFolderError:
        raise JobFolderError(f"{root}: the job is in use (a run or a regrade holds its .lock); regrade it "
                             "after that finishes") from None
    try:
        yield
    finally:
        os.close(fd)


async def _regrade_locked(root: Path, trials: list[TrialPaths], index: dict[str, Path] | None, *,
                          tasks_dir: str | Path | None, sandbox: str | None, concurrency: int,
                          reason: str | None, on_row: Callable[[dict[str, Any]], None] | None,
                          allowed: list[str], review: dict[str, Any] | None = None) -> dict[str, Any]:
    started = time.monotonic()
    candidates = await asyncio.to_thread(_candidates, root, trials, index, sandbox, allowed)
    backends = _backends({c.backend for c in candidates if c.skip is None}, sandbox)
    labels = {"benchflow.regrade": str(root.resolve())}
    slots = asyncio.Semaphore(concurrency)
    emit = on_row or (lambda _row: None)
    regraded: list[tuple[Candidate, dict[str, Any]]] = []

    async def one(candidate: Candidate) -> dict[str, Any]:
        async with slots:
            if candidate.skip is None:
                candidate.skip = await asyncio.to_thread(evidence_problem, candidate)
            document = None
            if candidate.skip is None:
                document = await regrade_trial(candidate, backends[candidate.backend], reason=reason,
                                               labels=labels)
        row = _row(root, candidate, document)
        if row["status"] == "regraded":
            regraded.append((candidate, document))
        emit(row)
        return row

    with sigterm_cancels_current_task():
        async with asyncio.TaskGroup() as group:  # a failure or Ctrl-C cancels the rest; each stops its sandbox
            running = [group.create_task(one(c)) for c in candidates]
        rows = [task.result() for task in running]
        review_counts: dict[str, int] = {}
        if review is not None:  # the review feature (jobs.extensions), as a run's review runs
            from benchflow.jobs.extensions import feature

            job_root = root.parent if is_trial_dir(root) else root
            review_counts = await feature("review").after_regrade(job_root, regraded, review, rows)
    summary = _summary(root, rows, reason=reason, tasks_dir=tasks_dir, sandbox=sandbox,
                       elapsed=time.monotonic() - started)
    if review is not None:
        summary["counts"].update(review_counts)
        summary["exit_code"] = exit_code(summary)
    atomic.write_json(JobPaths(root).regrade_summary, summary)
    return summary


def trials_of(path: Path) -> tuple[Path, list[TrialPaths]]:
    """(PATH, its trial folders): a job folder gives all of them, a trial folder itself."""
    hint = "give a job folder, or one trial folder inside it"
    if not path.exists():
        raise JobFolderError(f"{path}: no such folder; {hint}")
    if not path.is_dir():
        raise JobFolderError(f"{path}: not a folder; {hint}")
    job_root = path.parent if is_trial_dir(path) else path
    if is_harbor_job(job_root):
        raise JobFolderError(f"{path}: written by Harbor; bench regrade re-runs the verifier on a trial's frozen "
                             f"workspace (evidence/workspace/), which Harbor does not keep: regrade it with "
                             f"`harbor jobs regrade {job_root}`")
    if is_trial_dir(path):
        return path, [TrialPaths(path)]
    if not is_job_dir(path):
        jobs = find_jobs(path, 3)
        if jobs:
            raise JobFolderError(f"{path}: a folder of {len(jobs)} job(s), not one job; give one of them, "
                                 f"e.g. {jobs[-1]}")
        raise JobFolderError(f"{path}: not a job folder (no evaluation.json and no trial folders with "
                             f"config.json or result.json); {hint}")
    return path, JobPaths(path).trials()


def _task_index(tasks_dir: Path) -> dict[str, Path]:
    """Task name -> folder under ``--tasks-dir`` (a folder of tasks, or one task folder)."""
    from benchflow.tasks import discover_tasks

    if not tasks_dir.is_dir():
        raise ConfigError(f"--tasks-dir {tasks_dir}: no such folder; give the folder of task folders "
                          "(or one task folder) holding the changed verifiers")
    found = discover_tasks(tasks_dir)
    if not found:
        raise ConfigError(f"--tasks-dir {tasks_dir}: holds no task folder (a folder with task.md or "
                          "task.toml); give the folder of task folders or one task folder")
    return {p.name: p.resolve() for p in found}


def _candidates(root: Path, trials: list[TrialPaths], index: dict[str, Path] | None,
                sandbox: str | None, allowed: list[str]) -> list[Candidate]:
    """Read every trial's records and find its current task (loaded and digested once per task).

    Cheap checks only: the frozen workspace is hashed later, inside the concurrency limit.

    Raises:
        TaskError: a task reads a host variable ``allowed`` does not name (before any sandbox starts).
    """
    from benchflow.sandbox import default_backend_name

    recorded_tasks_dir = _recorded_tasks_dir(root)
    loaded: dict[Path, tuple[Any, str, tuple[str, ...]]] = {}
    out = []
    for paths in trials:
        candidate = Candidate(paths=paths, task_name=paths.name.rsplit("__", 1)[0])
        out.append(candidate)
        try:
            result = read_record(TrialResult, paths.result, name=paths.name)
            config = read_record(TrialConfig, paths.config, name=paths.name)
        except Unreadable as exc:
            candidate.skip = ("unreadable", str(exc))
            continue
        candidate.result = result.to_json() if result is not None else {}
        candidate.config = config.to_json() if config is not None else {}
        candidate.task_name = ((result.task_name if result else None) or (config.task_name if config else None)
                               or candidate.task_name)
        if result is None:
            candidate.skip = ("unfinished", "unfinished: no result.json, so there is no score to compare")
            continue
        if not candidate.workspace.is_dir():
            candidate.skip = ("no_frozen_workspace", "no frozen workspace (evidence/workspace/); only runs "
                              "with --freeze-workspace can be regraded")
            continue
        task_dir, why = _task_dir(candidate, index, recorded_tasks_dir)
        if task_dir is None:
            candidate.skip = ("task_not_found", why)
            continue
        if task_dir not in loaded:
            loaded[task_dir] = _load(task_dir, allowed)
        task, digest, secrets = loaded[task_dir]
        if isinstance(task, str):
            candidate.skip = ("task_invalid", task)
            continue
        candidate.task, candidate.digest, candidate.secrets = task, digest, secrets
        recorded = (config.environment if config else None) or result.environment
        candidate.backend = sandbox or (str(recorded) if recorded else None)
    unknown = [c for c in out if c.skip is None and c.backend is None]
    if unknown:  # a trial that recorded no backend gets today's default
        name = default_backend_name()
        for candidate in unknown:
            candidate.backend = name
    return out


def _recorded_tasks_dir(root: Path) -> Path | None:
    """``tasks_dir`` from the job's evaluation.json (PATH may be the job or one of its trials)."""
    for folder in (root, root.parent):
        try:
            record = read_record(EvaluationRecord, JobPaths(folder).evaluation)
        except Unreadable:
            continue
        if record is not None and record.tasks_dir:
            return Path(record.tasks_dir).expanduser()
    return None


def _task_dir(candidate: Candidate, index: dict[str, Path] | None,
              recorded: Path | None) -> tuple[Path | None, str]:
    name = candidate.task_name
    if index is not None:
        if name in index:
            return index[name], ""
        return None, f"no task folder named {name} under --tasks-dir"
    recorded_path = candidate.config.get("task_path")
    tries = []
    if recorded_path:
        task_path = Path(str(recorded_path)).expanduser()
        tries.append(task_path)
        if not task_path.is_absolute() and recorded is not None:
            tries.append(recorded / task_path)
    if recorded is not None:
        tries.append(recorded / name)
    for folder in tries:
        if (folder / "task.md").is_file() or (folder / "task.toml").is_file():
            return folder.resolve(), ""
    shown = tries[0] if tries else name
    return None, f"task folder {shown} (as the trial recorded it) is gone; pass --tasks-dir"


def _load(task_dir: Path, allowed: list[str]) -> tuple[Any, str, tuple[str, ...]]:
    """(the task with its env filled, its digest, the host values it reads), or (why not, "", ()).

    Raises:
        TaskError: the task reads a host variable ``allowed`` does not name.
    """
    from benchflow.tasks import load_task
    from benchflow.tasks.task_env import env_problems, resolve_task_env

    try:
        task = load_task(task_dir)
        digest = task.digest()
    except TaskError as exc:
        return f"the current task does not load: {exc}", "", ()
    except OSError as exc:
        return f"the current task cannot be read: {task_dir}: {exc.strerror}", "", ()
    problems = env_problems(task, allowed)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise TaskError(f"{task.name}: {problems[0]}{more}")
    task, used = resolve_task_env(task, allowed)
    return task, digest, tuple(used.values())


def _backends(names: set[str | None], chosen: str | None) -> dict[str | None, Any]:
    """Each backend the regrades need, checked before any sandbox starts."""
    from benchflow.sandbox import get_backend
    from benchflow.sandbox import names as known

    out = {}
    for name in sorted(n for n in names if n):
        if chosen is None and name not in known():
            raise ConfigError(f"trials ran on sandbox {name}, which this build does not provide; pass "
                              f"--sandbox with one of: {', '.join(known())}")
        backend = get_backend(name)
        ok, why = backend.available()
        if not ok:
            raise ConfigError(f"sandbox {name} cannot run here ({why}); pass --sandbox with one that can")
        out[name] = backend
    return out


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-9


def _row(root: Path, candidate: Candidate, document: dict[str, Any] | None) -> dict[str, Any]:
    original, _ = reward_of(candidate.result)
    rel = candidate.paths.root.relative_to(root).as_posix() if candidate.paths.root != root else "."
    row: dict[str, Any] = {"trial": candidate.paths.name, "path": rel, "task_name": candidate.task_name,
                           "original_reward": original, "reward": None, "changed": False}
    if document is None:
        code, sentence = candidate.skip or ("unknown", "not regradable")
        return {**row, "status": "not_regradable", "reason_code": code, "reason": sentence}
    new, _ = reward_of(document)
    errored = document.get("verifier_error") is not None or document.get("rewards") is None
    return {**row, "status": "errored" if errored else "regraded", "reward": new,
            "changed": (not errored) and not _same(original, new),
            "verifier_changed": document.get("verifier_changed"),
            "verifier_error": document.get("verifier_error"),
            "verifier_error_category": document.get("verifier_error_category"),
            "sandbox": document.get("sandbox"), "elapsed_sec": document.get("elapsed_sec")}


def _summary(root: Path, rows: list[dict[str, Any]], *, reason: str | None, tasks_dir: Any, sandbox: str | None,
             elapsed: float) -> dict[str, Any]:
    status = Counter(r["status"] for r in rows)
    counts = {"trials": len(rows), "regraded": status["regraded"], "errored": status["errored"],
              "not_regradable": status["not_regradable"], "changed": sum(1 for r in rows if r["changed"])}
    summary = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "path": str(root),
        "reason": reason,
        "tasks_dir": str(tasks_dir) if tasks_dir is not None else None,
        "sandbox": sandbox,
        "regraded_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "elapsed_sec": round(elapsed, 1),
        "counts": counts,
        "not_regradable": dict(Counter(r["reason_code"] for r in rows if r["status"] == "not_regradable")),
        "trials": rows,
    }
    summary["exit_code"] = exit_code(summary)
    return summary


def exit_code(summary: dict[str, Any]) -> int:
    """0: something was regraded and nothing errored; 1: nothing regradable, or a regrade (or its review) errored."""
    counts = summary["counts"]
    return 1 if counts["errored"] or counts.get("review_errored") or not counts["regraded"] else 0
