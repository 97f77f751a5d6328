"""``load_job``: a job folder (or a glob of folders, or a results.jsonl) as one ``benchflow.job`` document."""

from __future__ import annotations

import gc
import glob as globlib
import math
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Literal

from benchflow.errors import ConfigError, JobFolderError
from benchflow.jobs.layout import JobPaths, TrialPaths, is_harbor_job
from benchflow.records import Unreadable, read_json

from . import metrics
from .documents import JobDocument, TrialSummary
from .outcome import category_counts, denominators
from .reader import (
    is_job_dir,
    is_trial_dir,
    job_is_running,
    job_settings,
    mtime,
    note_unfinished,
    read_results_jsonl,
    read_trial_summary,
    require_dir,
)

Attempts = Literal["best", "all"]
GROUP_KEYS = ("agent", "model", "task_name", "seed", "control", "outcome", "execution", "error_category", "job")
_PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier", "total")


def check_attempts(attempts: str) -> Attempts:
    if attempts not in ("best", "all"):
        raise ConfigError(f"--attempts {attempts!r}: give best (one attempt per task, as resume picks) or all")
    return attempts  # type: ignore[return-value]


def parse_by(by: str | Iterable[str] | None) -> list[str]:
    """``"agent,model"`` or ``["agent", "model"]`` -> checked key list."""
    if by is None:
        return []
    parts = [by] if isinstance(by, str) else list(by)
    keys = [key.strip() for part in parts for key in part.split(",") if key.strip()]
    unknown = [key for key in keys if key not in GROUP_KEYS]
    if unknown:
        raise ConfigError(f"--by {','.join(unknown)}: unknown key; use any of {', '.join(GROUP_KEYS)}")
    return keys


def _attempt_rank(trial: TrialSummary) -> tuple[Any, ...]:
    """Resume keeps the newest trial that has a reward or a verifier error; then newest finished."""
    done = trial.reward is not None or trial.verifier_error is not None
    when = trial.finished_at or trial.started_at or ""
    return (done, trial.finished, when, mtime(trial.path) if not when else 0.0, trial.name)


def select_attempts(trials: list[TrialSummary], attempts: Attempts) -> list[TrialSummary]:
    """``best``: one trial per task and seed (retries are one sample; each --seeds value is its own); ``all``: all."""
    if attempts == "all":
        return trials
    units: dict[tuple[str, int | None], list[TrialSummary]] = {}
    for trial in trials:
        units.setdefault((trial.task_name, trial.seed), []).append(trial)
    chosen: list[TrialSummary] = []
    for group in units.values():
        best = group[0] if len(group) == 1 else max(group, key=_attempt_rank)
        if len(group) > 1:
            best = best.model_copy(update={"n_attempts": len(group)})
        chosen.append(best)
    chosen.sort(key=lambda t: t.name)
    return chosen


def split_controls(trials: list[TrialSummary], include_controls: bool) -> tuple[list[TrialSummary], int]:
    """The trials counted, and how many controls were left out (none when only controls ran)."""
    if include_controls:
        return trials, 0
    kept = [t for t in trials if t.control is None]
    if not kept:
        return trials, 0
    return kept, len(trials) - len(kept)


def groups_of(trials: list[TrialSummary], keys: list[str]) -> list[dict[str, Any]]:
    if not keys:
        return []
    grouped: dict[tuple[Any, ...], list[TrialSummary]] = {}
    for trial in trials:
        grouped.setdefault(tuple(getattr(trial, key) for key in keys), []).append(trial)
    return [{"group": dict(zip(keys, values)), "denominators": denominators(members)}
            for values, members in sorted(grouped.items(), key=lambda item: tuple(str(v) for v in item[0]))]


def _finite(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _totals(trials: list[TrialSummary], timings: dict[str, dict]) -> tuple[dict[str, float], int | None, float | None]:
    blocks = [timings[t.name] for t in trials if t.name in timings]
    phases = {phase: round(math.fsum(v for b in blocks if _finite(v := b.get(phase))), 1) for phase in _PHASES}
    tokens = [t.total_tokens for t in trials if t.total_tokens is not None]
    costs = [t.cost_usd for t in trials if t.cost_usd is not None]
    return phases, (sum(tokens) if tokens else None), (math.fsum(costs) if costs else None)


def _optional_record(path: Path, notes: list[str]) -> dict[str, Any] | None:
    try:
        record = read_json(path)
    except Unreadable as exc:
        notes.append(str(exc))
        return None
    return record if isinstance(record, dict) else None


def read_trials(path: Path, notes: list[str]) -> tuple[list[TrialSummary], dict[str, dict], str, JobPaths | None]:
    """Every trial under ``path`` (job, trial, results.jsonl or glob) with their timing blocks."""
    timings: dict[str, dict] = {}
    trials: list[TrialSummary] = []

    def add(folder: TrialPaths, job: str | None) -> None:
        summary, timing = read_trial_summary(folder, notes, job)
        trials.append(summary)
        if timing:
            timings[summary.name] = timing

    text = str(path)
    if any(ch in text for ch in "*?[") and not path.exists():
        matches = [Path(m) for m in sorted(globlib.glob(text))]
        if not matches:
            raise JobFolderError(f"{text}: the glob matches nothing; give a job folder, a trial folder or a glob of them")
        for match in matches:
            if is_trial_dir(match):
                add(TrialPaths(match), match.parent.name)
            elif is_job_dir(match):
                for folder in JobPaths(match).trials():
                    add(folder, match.name)
            else:
                notes.append(f"{match}: neither a job nor a trial folder; skipped")
        return trials, timings, "glob", None
    require_dir(path, "a job folder, a trial folder, a results.jsonl file or a glob")
    if path.is_file():
        if path.suffix != ".jsonl":
            raise JobFolderError(f"{path}: not a job folder or a results.jsonl file; give a job folder")
        return read_results_jsonl(path, notes), timings, "results.jsonl", None
    if is_trial_dir(path):
        add(TrialPaths(path), path.parent.name)
        return trials, timings, "job", JobPaths(path.parent)
    jobs = JobPaths(path)
    folders = jobs.trials()
    if not is_job_dir(path):
        raise JobFolderError(f"{path}: not a job folder (no evaluation.json, summary.json or <task>__<id> trial "
                             "folders); give one job, or use `bench eval list` for a folder of jobs")
    for folder in folders:
        add(folder, None)
    return trials, timings, "job", jobs


@contextmanager
def paused_gc():
    """Pause the cycle collector while reading: parsed JSON has no cycles, and on 10,000
    trials the collector's repeated passes over the growing heap cost as much as the parsing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_job(path: str | Path, *, attempts: str = "best", include_controls: bool = False,
             by: str | Iterable[str] | None = None, ks: Iterable[int] | None = None,
             solve_threshold: float | None = None) -> JobDocument:
    """Read a finished (or running, or interrupted) job folder into a ``benchflow.job`` document.

    Args:
        path: a job folder, one trial folder in it, a job-level ``results.jsonl`` or a glob of folders.
        attempts: ``best`` keeps one attempt per task (as resume picks), ``all`` keeps every trial.
        include_controls: count oracle/empty control runs in the denominators and solve rates.
        by: also count per group, e.g. ``"agent,model"``.
        ks, solve_threshold: passed to the solve-rate block (see :func:`metrics.solve_rates`).

    Raises:
        JobFolderError: ``path`` holds no job (exit 2, one line).
        ConfigError: a bad ``attempts`` or ``by`` value.
    """
    attempts = check_attempts(attempts)
    keys = parse_by(by)
    with paused_gc():
        return _load_job(Path(path), attempts, include_controls, keys, ks, solve_threshold)


def _load_job(path: Path, attempts: Attempts, include_controls: bool, keys: list[str],
              ks: Iterable[int] | None, solve_threshold: float | None) -> JobDocument:
    notes: list[str] = []
    trials, timings, source, jobs = read_trials(path, notes)
    running = job_is_running(jobs) if jobs else False
    first = next((TrialPaths(Path(t.path)) for t in trials if t.finished), None)
    settings = job_settings(jobs, first, notes) if jobs else {}
    regrade = _optional_record(jobs.regrade_summary, notes) if jobs else None
    harbor = bool(jobs and is_harbor_job(jobs.root))
    if harbor and trials:
        notes.append("a Harbor job folder: read through Harbor's field names (exception_info, verifier_result, "
                     "per-phase times), settings from its config.json; each trial folder is one sample (Harbor's "
                     "n_attempts; its retries reuse the folder), so every one counts whatever --attempts says")
    elif jobs and trials and not jobs.evaluation.is_file():
        notes.append("no evaluation.json (a job written by BenchFlow 0.7, or an older run): the settings come "
                     "from summary.json and the first trial's config.json")
    if not trials:
        notes.append(f"{path}: no trial folders yet")
    note_unfinished(trials, notes, running)
    selected = trials if harbor else select_attempts(trials, attempts)
    counted, excluded = split_controls(selected, include_controls)
    finished = [t for t in counted if t.finished]
    errors, verifier_errors = category_counts(finished)
    phases, tokens, cost = _totals(finished, timings)
    solve = metrics.solve_rates(finished, ks=ks, solve_threshold=solve_threshold)
    solve["controls_excluded"] = excluded
    return JobDocument(
        path=str(path), name=jobs.name if jobs else path.name, source=source, running=running,
        settings=settings, attempts=attempts, include_controls=include_controls,
        denominators=denominators(counted),
        denominators_with_controls=denominators(selected) if excluded else None,
        controls_excluded=excluded, groups=groups_of(counted, keys), solve_rates=solve,
        error_categories=errors, verifier_error_categories=verifier_errors, timing_totals=phases,
        total_tokens=tokens, cost_usd=cost, regrade_summary=regrade, notes=notes, trials=selected,
    )
