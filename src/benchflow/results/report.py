"""``bench eval metrics``: pool every job under a folder and report per setting.

A task's trials are pooled across job folders (each job contributes one
attempt per task, as ``load_job`` counts them). Trials are split by what ran:
agent, harness, served model, effort, task set and BenchFlow version. A
folder holding several settings gets one entry per setting and no pooled
score, with a warning naming what differs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, Field

from benchflow.errors import JobFolderError

from . import metrics
from .documents import TrialSummary
from .job import groups_of, load_job, split_controls
from .outcome import denominators
from .reader import find_jobs, require_dir
from .review_metrics import integrity_figures, review_figures

SETTING_FIELDS = ("agent", "harness", "model", "reasoning_effort", "task_set", "benchflow_version")


class SettingMetrics(BaseModel):
    setting: dict[str, Any]
    jobs: list[str]
    denominators: dict[str, Any]
    solve_rates: dict[str, Any]
    mean_tool_calls: float | None = None
    mean_duration_sec: float | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None
    review: dict[str, Any] | None = None
    """Rubric-review figures (``review_metrics.review_figures``); None when no trial was reviewed."""
    integrity: dict[str, Any] | None = None
    """Integrity verdict counts (``review_metrics.integrity_figures``); None when no trial was audited."""


class MetricsReport(BaseModel):
    """``benchflow.metrics``: what ``bench eval metrics --json`` prints."""

    kind: str = "benchflow.metrics"
    schema_version: int = 1
    schema_minor: int = 0
    path: str
    jobs: list[str]
    filters: dict[str, Any]
    include_controls: bool
    controls_excluded: int
    solve_threshold: float | None
    settings: list[SettingMetrics]
    pooled: SettingMetrics | None = None
    """The one setting's figures; ``None`` when the folder mixes settings (one number would mix them)."""
    by_agent: list[dict[str, Any]] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def _setting(job_settings: dict[str, Any], trial: TrialSummary) -> tuple[Any, ...]:
    task_set = job_settings.get("dataset_name")
    if task_set and job_settings.get("dataset_version"):
        task_set = f"{task_set}@{job_settings['dataset_version']}"
    task_set = task_set or (Path(str(job_settings["tasks_dir"])).name if job_settings.get("tasks_dir") else None)
    return (trial.agent or job_settings.get("agent"), job_settings.get("harness_mode"),
            trial.model or job_settings.get("model"), job_settings.get("reasoning_effort"), task_set,
            job_settings.get("benchflow_version"))


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _figures(setting: tuple[Any, ...], trials: list[TrialSummary], jobs: list[str], ks: Iterable[int] | None,
             solve_threshold: float | None) -> SettingMetrics:
    finished = [t for t in trials if t.finished]
    tokens = [t.total_tokens for t in finished if t.total_tokens is not None]
    costs = [t.cost_usd for t in finished if t.cost_usd is not None]
    return SettingMetrics(
        setting=dict(zip(SETTING_FIELDS, setting)), jobs=sorted(set(jobs)), denominators=denominators(trials),
        solve_rates=metrics.solve_rates(finished, ks=ks, solve_threshold=solve_threshold),
        mean_tool_calls=_mean([t.n_tool_calls for t in finished if t.n_tool_calls is not None]),
        mean_duration_sec=_mean([t.duration_sec for t in finished if t.duration_sec is not None]),
        total_tokens=sum(tokens) if tokens else None, cost_usd=math.fsum(costs) if costs else None,
        review=review_figures(trials), integrity=integrity_figures(trials))


def _matches(value: str | None, wanted: str | None) -> bool:
    return wanted is None or (value is not None and value.lower() == wanted.lower())


def collect_metrics(jobs_dir: str | Path, *, benchmark: str | None = None, agent: str | None = None,
                    model: str | None = None, ks: Iterable[int] | None = None,
                    solve_threshold: float | None = None, include_controls: bool = False) -> MetricsReport:
    """Metrics over every job at or under ``jobs_dir``.

    Raises:
        JobFolderError: no job folder under ``jobs_dir`` (exit 2).
    """
    root = require_dir(Path(jobs_dir), "a jobs folder")
    job_dirs = find_jobs(root)
    if not job_dirs:
        raise JobFolderError(f"{root}: holds no job folder (a folder with <task>__<id> trials); "
                             "give the jobs folder `bench run` wrote")
    pooled: list[tuple[tuple[Any, ...], TrialSummary, str]] = []
    notes: list[str] = []
    for job_dir in job_dirs:
        doc = load_job(job_dir, attempts="best", include_controls=True)
        notes.extend(f"{doc.name}: {note}" for note in doc.notes)
        set_name = doc.settings.get("dataset_name") or Path(str(doc.settings.get("tasks_dir", ""))).name or None
        if benchmark and not (_matches(set_name, benchmark) or _matches(doc.name, benchmark)):
            continue
        for trial in doc.trials:
            if _matches(trial.agent, agent) and _matches(trial.model, model):
                trial.job = doc.name
                pooled.append((_setting(doc.settings, trial), trial, doc.name))
    counted, excluded = split_controls([t for _, t, _ in pooled], include_controls)
    kept = {id(t) for t in counted}
    by_setting: dict[tuple[Any, ...], tuple[list[TrialSummary], list[str]]] = {}
    for setting, trial, job in pooled:
        if id(trial) in kept:
            members, jobs = by_setting.setdefault(setting, ([], []))
            members.append(trial)
            jobs.append(job)
    entries = [_figures(setting, members, jobs, ks, solve_threshold)
               for setting, (members, jobs) in sorted(by_setting.items(), key=lambda i: tuple(map(str, i[0])))]
    warnings = []
    if len(entries) > 1:
        differing = [f for i, f in enumerate(SETTING_FIELDS) if len({k[i] for k in by_setting}) > 1]
        warnings.append(f"the trials ran with {len(entries)} settings (they differ in {', '.join(differing)}): "
                        "one line per setting and no pooled score")
    if not pooled:
        warnings.append("no trial matches the filters")
    return MetricsReport(
        path=str(root), jobs=[str(p) for p in job_dirs],
        filters={"benchmark": benchmark, "agent": agent, "model": model}, include_controls=include_controls,
        controls_excluded=excluded, solve_threshold=solve_threshold, settings=entries,
        pooled=entries[0] if len(entries) == 1 else None,
        by_agent=groups_of(counted, ["agent"]) if len(entries) > 1 else [], warnings=warnings, notes=notes)
