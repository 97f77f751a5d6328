"""The one reader of job and trial folders (the 0.10 layout and BenchFlow 0.7's, which share it).

Reads only what a summary needs: ``result.json`` per trial (``config.json``
only for a trial that never finished), a few job-level records for the
settings. Trajectories are never opened here. Every path comes from
:mod:`benchflow.jobs.layout`.

Every record is read through its model (:mod:`benchflow.records`), which also
reads BenchFlow 0.7's records. Tolerance rules: every file but ``result.json``
is optional; a file that does not parse becomes a *note* (plain words, naming
the file) instead of an exception, and the trial is read as unfinished; a value
of the wrong type is left out with a note. Only a path that holds no job at all
is an error (``JobFolderError``, exit 2).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchflow.categories import classify_error, classify_verifier_error
from benchflow.errors import JobFolderError
from benchflow.jobs.layout import JobPaths, TrialPaths, is_harbor_job
from benchflow.records import (
    EvaluationRecord,
    JobSummary,
    TrialConfig,
    TrialResult,
    Unreadable,
    as_result,
    read_optional,
    read_record,
    upgrade,
)

from .documents import TrialSummary
from .review import integrity_of, review_of
from .turns import read_turns, read_user
from .outcome import (
    assessment_of,
    control_of,
    execution_of,
    outcome_of,
)

_PROBE = TrialPaths(Path("/"))
RESULT_NAME = _PROBE.result.relative_to("/").as_posix()
CONFIG_NAME = _PROBE.config.relative_to("/").as_posix()
"""File names inside a trial folder, as the layout owns them (strings: the hot loop skips pathlib)."""


def task_name_of(trial: TrialPaths, result: TrialResult | None, config: TrialConfig | None) -> str:
    """``result.task_name`` → ``config.task_name`` (or its ``task_path`` basename) → the folder name."""
    for record in (result, config):
        if record is not None and record.task_name:
            return record.task_name
    return os.path.basename(os.fspath(trial.root)).rsplit("__", 1)[0]


def reward_of(result: TrialResult | dict[str, Any]) -> tuple[float | None, dict | None]:
    """``rewards.reward`` and the whole ``rewards`` block (0.7's and Harbor's shapes are read by upgrade)."""
    try:
        result = as_result(result)
    except Unreadable:
        return None, None
    if result.rewards is None:
        return None, None
    return result.reward, result.rewards.model_dump(mode="python")


def summarize(trial: TrialPaths, result: TrialResult | None, config: TrialConfig | None,
              job: str | None = None, notes: list[str] | None = None) -> TrialSummary:
    """A :class:`TrialSummary` from the records; ``result=None`` means unfinished (an unreadable turn or
    simulated-user record is a note in ``notes``)."""
    finished = result is not None
    root = os.fspath(trial.root)
    r = result if result is not None else TrialResult(task_name=task_name_of(trial, None, config))
    reward, rewards = reward_of(r)
    error, verifier_error = r.error or None, r.verifier_error or None
    error_category = r.error_category or classify_error(error)
    verifier_category = r.verifier_error_category or classify_verifier_error(verifier_error)
    usage = r.agent_result
    task = task_name_of(trial, result, config)
    agent = r.agent or (config.agent if config else None)
    tool_calls = r.n_tool_calls if r.n_tool_calls is not None else (usage.n_tool_calls if usage else None)
    return TrialSummary.model_validate(dict(
        name=os.path.basename(root), path=root, task_name=task, reward=reward, rewards=rewards,
        outcome=outcome_of(reward, error, verifier_error, finished),
        execution=execution_of(error, error_category, finished),
        assessment=assessment_of(reward, verifier_error),
        control=control_of(agent, task),
        error=error, error_category=error_category,
        verifier_error=verifier_error, verifier_error_category=verifier_category,
        duration_sec=r.timing.total if r.timing else None, n_tool_calls=tool_calls,
        total_tokens=usage.total_tokens if usage else None, cost_usd=usage.cost_usd if usage else None,
        started_at=r.started_at or (config.started_at if config else None) or None,
        finished_at=r.finished_at or None,
        agent=agent or None, model=r.model or (config.model if config else None),
        finished=finished, seed=r.seed if result is not None or config is None else config.seed,
        n_attempts=1, job=job,
        steps=[step.model_dump(mode="json") for step in r.steps] if r.steps else None,
        review=review_of(result), integrity=integrity_of(trial),
        turns=read_turns(trial, notes), simulated_user=read_user(trial, notes),
    ))


def read_trial_summary(trial: TrialPaths, notes: list[str] | None = None, job: str | None = None,
                       ) -> tuple[TrialSummary, dict | None]:
    """Read one trial folder cheaply; returns the summary and the ``timing`` block."""
    root = os.fspath(trial.root)
    name = os.path.basename(root)
    result = config = None
    try:
        result = read_record(TrialResult, os.path.join(root, RESULT_NAME), name=name, notes=notes)
    except Unreadable as exc:
        if notes is not None:
            notes.append(f"{exc}; read as unfinished")
    if result is None:
        config = read_optional(TrialConfig, os.path.join(root, CONFIG_NAME), notes if notes is not None else [],
                               name=name)
    summary = summarize(trial, result, config, job, notes)
    timing = result.timing.model_dump() if result is not None and result.timing is not None else None
    return summary, timing


def is_trial_dir(path: Path) -> bool:
    trial = TrialPaths(path)
    return path.is_dir() and (trial.result.is_file() or trial.config.is_file()) and not is_harbor_job(path)


def is_job_dir(path: Path) -> bool:
    """A job holds evaluation.json, or trial folders (``<task>__<id>`` with config/result).

    A jobs folder also holds a ``summary.json`` (the copy of its latest job), so
    a summary alone does not make a job unless nothing below it is one.
    """
    jobs = JobPaths(path)
    if not path.is_dir() or is_trial_dir(path):
        return False
    if jobs.evaluation.is_file():
        return True
    for trial in jobs.trials():
        if (trial.result.is_file() or trial.config.is_file()) and not is_harbor_job(trial.root):
            return True
    return jobs.summary.is_file() and not any(find_jobs(child, 3) for child in _subdirs(path))


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def find_jobs(root: Path, max_depth: int = 4) -> list[Path]:
    """Every job folder at or under ``root`` (``<jobs>/<agent>/trial-NN/<job>/`` included), sorted."""
    if is_job_dir(root):
        return [root]
    if max_depth <= 0:
        return []
    found: list[Path] = []
    for child in _subdirs(root):
        found.extend(find_jobs(child, max_depth - 1))
    return found


def require_dir(path: Path, what: str = "a job folder") -> Path:
    if not path.exists():
        raise JobFolderError(f"{path}: no such file or folder; give {what}")
    return path


def job_is_running(jobs: JobPaths) -> bool:
    """True when another process holds the job's lock (a live run writes into this folder)."""
    if not jobs.lock.is_file():
        return False
    import fcntl

    try:
        with open(jobs.lock, "rb") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    except OSError:
        return False
    return False


_SETTING_KEYS = ("job_name", "agent", "model", "reasoning_effort", "harness_mode", "sandbox", "environment",
                 "tasks_dir", "dataset_name", "dataset_version", "concurrency", "timeout_sec",
                 "agent_idle_timeout_sec", "sandbox_user", "started_at", "benchflow_version", "source")
_NESTED = ("identity", "run_config", "spec", "run", "run_spec", "config", "settings")


def _pick(record: Any, into: dict[str, Any]) -> None:
    if not isinstance(record, dict):
        return
    for nested in _NESTED:
        _pick(record.get(nested), into)
    for key in _SETTING_KEYS:
        value = record.get(key)
        if value not in (None, "", [], {}):
            into[key] = value


def job_settings(jobs: JobPaths, first_trial: TrialPaths | None, notes: list[str]) -> dict[str, Any]:
    """Run settings: the first trial's config.json, then summary.json (0.7), then evaluation.json (0.10);
    a Harbor job's own result.json (its summary) and config.json (its run config) stand for the last two."""
    settings: dict[str, Any] = {}
    sources: list[tuple[type, Path]] = [(JobSummary, jobs.summary), (EvaluationRecord, jobs.evaluation)]
    if is_harbor_job(jobs.root):
        own = TrialPaths(jobs.root)  # Harbor's job records sit where a trial's would
        sources = [(JobSummary, own.result), (EvaluationRecord, own.config)]
    if first_trial:
        sources.insert(0, (TrialConfig, first_trial.config))
    for model, source in sources:
        record = read_optional(model, source, notes)
        if record is not None:
            _pick(record.to_json(), settings)
    if "sandbox" not in settings and "environment" in settings:
        settings["sandbox"] = settings["environment"]
    settings.pop("environment", None)
    settings.setdefault("job_name", jobs.name)
    return settings


def read_results_jsonl(path: Path, notes: list[str]) -> list[TrialSummary]:
    """Trials from a job-level ``results.jsonl`` (Verifiers rows): task, reward and error only."""
    trials: list[TrialSummary] = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                notes.append(f"{path}: line {number} is not valid JSON; skipped")
                continue
            info = row.get("info") if isinstance(row.get("info"), dict) else {}
            task = info.get("task_name") or info.get("task_id") or str(row.get("example_id", f"row-{number}"))
            name = info.get("rollout_name") or info.get("trial_name") or f"{task}__row{number}"
            record = {"task_name": task, "rewards": {"reward": row.get("reward")}, "error": row.get("error"),
                      "agent": info.get("agent"), "model": info.get("model")}
            result = upgrade(TrialResult, record, name=name, notes=notes, source=f"{path}: line {number}")
            trials.append(summarize(TrialPaths(path.parent / name), result, None))
    if not trials:
        notes.append(f"{path}: holds no rows")
    return trials


def note_unfinished(trials: list[TrialSummary], notes: list[str], running: bool) -> None:
    unfinished = [t.name for t in trials if not t.finished]
    if unfinished:
        shown = ", ".join(unfinished[:5]) + (" …" if len(unfinished) > 5 else "")
        state = "still running" if running else "interrupted: no result.json"
        notes.append(f"{len(unfinished)} trial folder(s) {state} ({shown}); left out of the denominators")


def mtime(path: str) -> float:
    try:
        return os.stat(TrialPaths(Path(path)).result).st_mtime
    except OSError:
        return 0.0
