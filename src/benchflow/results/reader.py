"""The one reader of job and trial folders (the 0.10 layout and BenchFlow 0.7's, which share it).

Reads only what a summary needs: ``result.json`` per trial (``config.json``
only for a trial that never finished), a few job-level records for the
settings. Trajectories are never opened here. Every path comes from
:mod:`benchflow.jobs.layout`.

Tolerance rules: every file but ``result.json`` is optional; a file that does
not parse becomes a *note* (plain words, naming the file) instead of an
exception, and the trial is read as unfinished. Only a path that holds no job
at all is an error (``JobFolderError``, exit 2).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchflow.categories import classify_error, classify_verifier_error
from benchflow.errors import JobFolderError
from benchflow.jobs.layout import JobPaths, TrialPaths

from .documents import TrialSummary
from .outcome import (
    assessment_of,
    clean_reward,
    control_of,
    execution_of,
    outcome_of,
)

_PROBE = TrialPaths(Path("/"))
RESULT_NAME = _PROBE.result.relative_to("/").as_posix()
CONFIG_NAME = _PROBE.config.relative_to("/").as_posix()
"""File names inside a trial folder, as the layout owns them (strings: the hot loop skips pathlib)."""


class Unreadable(Exception):
    """A record exists but cannot be used; the message is the note shown to the user."""


def read_json(path: Path | str) -> Any:
    """The parsed file, ``None`` when it does not exist; ``Unreadable`` when it does not parse."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"{path}: cannot be read ({exc.strerror})") from exc
    try:
        return json.loads(data)
    except ValueError as exc:
        raise Unreadable(f"{path}: not valid JSON ({exc})") from exc


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _number(value: Any) -> float | None:
    return clean_reward(value)


def _int(value: Any) -> int | None:
    number = clean_reward(value)
    return int(number) if number is not None else None


def task_name_of(trial: TrialPaths, result: dict | None, config: dict | None) -> str:
    """``result.task_name`` → ``config.task_path`` basename → the folder name before ``__``."""
    for record in (result, config):
        if record:
            name = record.get("task_name") or record.get("task_id")
            if isinstance(name, str) and name:
                return name
    if config and isinstance(config.get("task_path"), str) and config["task_path"]:
        return Path(config["task_path"]).name
    return os.path.basename(os.fspath(trial.root)).rsplit("__", 1)[0]


def reward_of(result: dict) -> tuple[float | None, dict | None]:
    """``rewards.reward`` (canonical); a top-level ``reward`` or Harbor's ``verifier_result`` as fallbacks."""
    rewards = result.get("rewards")
    if not isinstance(rewards, dict):
        verifier_result = result.get("verifier_result")
        rewards = verifier_result.get("rewards") if isinstance(verifier_result, dict) else None
    if isinstance(rewards, dict):
        return clean_reward(rewards.get("reward")), rewards
    return clean_reward(result.get("reward")), None


def summarize(trial: TrialPaths, result: dict | None, config: dict | None, job: str | None = None) -> TrialSummary:
    """A :class:`TrialSummary` from the parsed records; ``result=None`` means unfinished."""
    finished = result is not None
    result = result or {}
    root = os.fspath(trial.root)
    reward, rewards = reward_of(result)
    error = _text(result.get("error"))
    verifier_error = _text(result.get("verifier_error"))
    error_category = _text(result.get("error_category")) or classify_error(error)
    verifier_category = _text(result.get("verifier_error_category")) or classify_verifier_error(verifier_error)
    agent_result = result.get("agent_result") if isinstance(result.get("agent_result"), dict) else {}
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    timing = result.get("timing") if isinstance(result.get("timing"), dict) else {}
    task = task_name_of(trial, result, config)
    agent = _text(result.get("agent") or (config or {}).get("agent"))
    tool_calls = result.get("n_tool_calls", agent_result.get("n_tool_calls"))
    cost = agent_result.get("cost_usd")
    if cost is None:
        cost = usage.get("cost_usd", usage.get("cost_estimate"))
    return TrialSummary.model_validate(dict(
        name=os.path.basename(root), path=root, task_name=task, reward=reward, rewards=rewards,
        outcome=outcome_of(reward, error, verifier_error, finished),
        execution=execution_of(error, error_category, finished),
        assessment=assessment_of(reward, verifier_error),
        control=control_of(agent, task),
        error=error, error_category=error_category,
        verifier_error=verifier_error, verifier_error_category=verifier_category,
        duration_sec=_number(timing.get("total")), n_tool_calls=_int(tool_calls),
        total_tokens=_int(agent_result.get("total_tokens")), cost_usd=_number(cost),
        started_at=_text(result.get("started_at") or (config or {}).get("started_at")),
        finished_at=_text(result.get("finished_at")),
        agent=agent, model=_text(result.get("model") or (config or {}).get("model")),
        finished=finished, seed=_int(result.get("seed", (config or {}).get("seed"))), n_attempts=1, job=job,
    ))


def read_trial_summary(trial: TrialPaths, notes: list[str] | None = None, job: str | None = None,
                       ) -> tuple[TrialSummary, dict | None]:
    """Read one trial folder cheaply; returns the summary and the raw ``timing`` block."""
    root = os.fspath(trial.root)
    result = config = None
    try:
        result = read_json(os.path.join(root, RESULT_NAME))
    except Unreadable as exc:
        if notes is not None:
            notes.append(f"{exc}; read as unfinished")
    if not isinstance(result, dict):
        if result is not None and notes is not None:
            notes.append(f"{os.path.join(root, RESULT_NAME)}: not a JSON object; read as unfinished")
        result = None
        try:
            config = read_json(os.path.join(root, CONFIG_NAME))
        except Unreadable as exc:
            if notes is not None:
                notes.append(str(exc))
        config = config if isinstance(config, dict) else None
    summary = summarize(trial, result, config, job)
    timing = result.get("timing") if result and isinstance(result.get("timing"), dict) else None
    return summary, timing


def is_trial_dir(path: Path) -> bool:
    trial = TrialPaths(path)
    return path.is_dir() and (trial.result.is_file() or trial.config.is_file())


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
        if trial.result.is_file() or trial.config.is_file():
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
    """Run settings: the first trial's config.json, then summary.json (0.7), then evaluation.json (0.10)."""
    settings: dict[str, Any] = {}
    sources = ([first_trial.config] if first_trial else []) + [jobs.summary, jobs.evaluation]
    for source in sources:
        try:
            _pick(read_json(source), settings)
        except Unreadable as exc:
            notes.append(str(exc))
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
            result = {"task_name": task, "rewards": {"reward": row.get("reward")}, "error": row.get("error"),
                      "agent": info.get("agent"), "model": info.get("model")}
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
        return os.stat(Path(path) / "result.json").st_mtime
    except OSError:
        return 0.0
