"""``bench embodied report``: seeded rollouts per task (rewards by seed, mean, std, pass@k, reset reproducibility).

A run with ``--seeds`` has one trial per (task, seed). A trial's task and seed come from, in order: a seeded
variant's name ``<task>--seed-<n>`` (BenchFlow 0.7's embodied task formats), the seed ``result.json`` records
(``bench run --seeds``), the seed of its episode record. The rewards are the counted attempts' (one per job, task
and seed, as resume and ``bench results`` pick them); a trial is scored when it has a reward and no error.

Reset reproducibility asks whether every trial of one seed started from the same initial state: the
``initial_state_sha256`` of the episode records of every attempt (retries too, and the repeats of several jobs
read together through a glob), for each seed that ran more than once.

pass@k is the unbiased estimate (:func:`benchflow.scoring.pass_at_k`) for k = 1..n per task; the job's pass@k is
the mean over the tasks that have that k. ``std`` is the sample standard deviation (0 for one trial).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import JobFolderError
from benchflow.jobs.layout import TrialPaths
from benchflow.results import TrialSummary
from benchflow.results.job import read_trials, select_attempts
from benchflow.scoring import pass_at_k, wilson

from .record import read_episode, split_seed_name

KIND = "benchflow.embodied-report"
SCHEMA_VERSION = 1
UNSEEDED = "unseeded"
"""The ``rewards_by_seed`` key of trials that ran without a seed."""


@dataclass(frozen=True)
class Row:
    """One trial, as the report counts it."""

    trial: str
    job: str
    """The job folder's path."""
    task: str
    seed: int | None
    reward: float | None
    scored: bool
    episode_return: float | None
    initial_state_sha256: str | None
    mode: str


def _row(trial: TrialSummary) -> Row:
    base, seed = split_seed_name(trial.task_name)
    if seed is None:
        folder_base, seed = split_seed_name(trial.name.rsplit("__", 1)[0])
        base = folder_base if seed is not None else base
    episode = read_episode(TrialPaths(Path(trial.path)))
    result = (episode.result if episode else None) or {}
    if seed is None:
        seed = trial.seed if trial.seed is not None else (episode.seed if episode else None)
    episode_return = result.get("return")
    return Row(
        trial=trial.name, job=str(Path(trial.path).parent), task=base, seed=seed, reward=trial.reward,
        scored=trial.reward is not None and not trial.error and not trial.verifier_error,
        episode_return=float(episode_return) if isinstance(episode_return, (int, float))
        and not isinstance(episode_return, bool) else None,
        initial_state_sha256=episode.initial_state_sha256 if episode else None,
        mode=episode.mode if episode else "sim",
    )


def read_rows(path: Path) -> tuple[list[Row], list[Row], list[str]]:
    """(the counted attempts, every attempt, notes) of a job folder, a trial folder or a glob of them."""
    notes: list[str] = []
    trials, _, _, _ = read_trials(path, notes)
    finished = [t for t in trials if t.finished]
    by_path = {t.path: _row(t) for t in finished}
    jobs: dict[str, list[TrialSummary]] = {}
    for trial in finished:  # attempts are picked per job folder, by the task and seed the row found
        row = by_path[trial.path]
        jobs.setdefault(row.job, []).append(
            trial.model_copy(update={"task_name": row.task, "seed": row.seed}))
    counted = [by_path[t.path] for group in jobs.values() for t in select_attempts(group, "best")]
    return counted, list(by_path.values()), notes


def _seed_key(seed: int | None) -> str:
    return UNSEEDED if seed is None else str(seed)


def _task_entry(rows: list[Row], attempts: list[Row]) -> dict[str, Any]:
    scored = [r for r in rows if r.scored]
    rewards = [float(r.reward) for r in scored if r.reward is not None]
    n, passes = len(rewards), sum(1 for x in rewards if x >= 1.0)
    by_seed: dict[str, list[float | None]] = {}
    for row in sorted(rows, key=lambda r: (r.seed is None, r.seed or 0, r.job, r.trial)):
        by_seed.setdefault(_seed_key(row.seed), []).append(row.reward)
    hashes: dict[str, list[str]] = {}
    for row in attempts:
        if row.initial_state_sha256:
            hashes.setdefault(_seed_key(row.seed), []).append(row.initial_state_sha256)
    repeated = {seed: len(set(found)) == 1 for seed, found in hashes.items() if len(found) > 1}
    returns = [r.episode_return for r in scored if r.episode_return is not None]
    low, high = wilson(passes, n)
    entry: dict[str, Any] = {
        "n": n, "errored": len(rows) - n, "passes": passes, "rewards_by_seed": by_seed,
        "mean": statistics.fmean(rewards) if rewards else None,
        "std": statistics.stdev(rewards) if n > 1 else (0.0 if n == 1 else None),
        "pass_at_k": {str(k): round(pass_at_k(n, passes, k) or 0.0, 6) for k in range(1, n + 1)},
        "pass_rate_ci95": None if low is None else [round(low, 6), round(high, 6)],
        "mode": sorted({r.mode for r in rows}),
        "mean_return": statistics.fmean(returns) if returns else None,
        "distinct_initial_states": len({h for found in hashes.values() for h in found}) or None,
    }
    if repeated:
        entry["reset_reproducible"] = all(repeated.values())
        entry["irreproducible_seeds"] = sorted(seed for seed, same in repeated.items() if not same)
    return entry


def seed_report(path: Path) -> dict[str, Any]:
    """The report document of a job folder, a trial folder or a glob of job folders.

    Raises:
        JobFolderError: ``path`` holds no job, or no finished trial.
    """
    rows, attempts, notes = read_rows(path)
    if not rows:
        raise JobFolderError(f"{path}: no finished trials to report on; give a job folder whose trials have run")
    tasks: dict[str, dict[str, Any]] = {}
    for name in sorted({r.task for r in rows}):
        tasks[name] = _task_entry([r for r in rows if r.task == name], [r for r in attempts if r.task == name])
    ks = sorted({int(k) for entry in tasks.values() for k in entry["pass_at_k"]})
    means = [e["mean"] for e in tasks.values() if e["mean"] is not None]
    scored = [r for r in rows if r.scored and r.reward is not None]
    passes = sum(1 for r in scored if float(r.reward or 0.0) >= 1.0)
    verdicts = [e["reset_reproducible"] for e in tasks.values() if "reset_reproducible" in e]
    low, high = wilson(passes, len(scored))
    summary: dict[str, Any] = {
        "tasks": len(tasks), "trials": len(rows),
        "mean_reward": statistics.fmean(means) if means else None,
        "pass_at_k": {str(k): round(statistics.fmean(pass_at_k(e["n"], e["passes"], k) or 0.0
                                                     for e in tasks.values() if e["n"] >= k), 6) for k in ks},
        "pass_rate": round(passes / len(scored), 6) if scored else None,
        "pass_rate_ci95": None if low is None else [round(low, 6), round(high, 6)],
        "reset_reproducible": all(verdicts) if verdicts else None,
        "by_mode": _by_mode(scored),
    }
    return {"kind": KIND, "schema_version": SCHEMA_VERSION, "path": str(path), "summary": summary,
            "tasks": tasks, "notes": notes}


def _by_mode(scored: list[Row]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for mode in sorted({r.mode for r in scored}):
        rewards = [float(r.reward or 0.0) for r in scored if r.mode == mode]
        passed = sum(1 for x in rewards if x >= 1.0)
        low, high = wilson(passed, len(rewards))
        out[mode] = {"trials": len(rewards), "pass_rate": round(passed / len(rewards), 6),
                     "pass_rate_ci95": [round(low or 0.0, 6), round(high or 0.0, 6)]}
    return out


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_report(report: dict[str, Any]) -> str:
    """The report as a fixed-width table (one task a line), then the job's pass rate and modes."""
    summary = report["summary"]
    ks = list(summary["pass_at_k"])
    width = max([len("all tasks"), *(len(name) for name in report["tasks"])])
    head = f"{'TASK':<{width}} {'N':>3} {'PASS':>4} {'MEAN':>6} {'STD':>6} " + " ".join(f"{'P@' + k:>6}" for k in ks)
    lines = [head + f" {'RESET':>6}"]
    for name, entry in report["tasks"].items():
        cells = " ".join(f"{entry['pass_at_k'][k]:>6.3f}" if k in entry["pass_at_k"] else f"{'-':>6}" for k in ks)
        reset = {True: "same", False: "DIFFER"}.get(entry.get("reset_reproducible"), "-")
        lines.append(f"{name:<{width}} {entry['n']:>3} {entry['passes']:>4} {_cell(entry['mean']):>6} "
                     f"{_cell(entry['std']):>6} {cells} {reset:>6}")
        if entry.get("irreproducible_seeds"):
            lines.append(f"  {name}: seed(s) {', '.join(entry['irreproducible_seeds'])} started from different states")
    pooled = " ".join(f"{v:>6.3f}" for v in summary["pass_at_k"].values())
    lines.append(f"{'all tasks':<{width}} {summary['trials']:>3} {'':>4} {_cell(summary['mean_reward']):>6} "
                 f"{'':>6} {pooled}")
    if summary["pass_rate"] is not None:
        low, high = summary["pass_rate_ci95"]
        lines.append(f"pass rate {summary['pass_rate']:.3f} (95% Wilson interval {low:.3f}-{high:.3f})")
    for mode, block in summary["by_mode"].items():
        low, high = block["pass_rate_ci95"]
        lines.append(f"  {mode}: {block['trials']} trial(s), pass rate {block['pass_rate']:.3f} [{low:.3f}, {high:.3f}]")
    return "\n".join(lines)
