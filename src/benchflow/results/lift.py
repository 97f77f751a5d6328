"""``bench eval compare-lift``: baseline vs trained job, paired by task, with a paired bootstrap (§4.7).

One healthy rollout per task and side; tasks healthy on both sides are
paired. The interval of each mean per-task delta is a nonparametric paired
bootstrap driven by ``random.Random(seed)``, so a seed gives the same report
on every machine.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

from benchflow.errors import UserError
from benchflow.jobs.layout import TrialPaths
from benchflow.records import TrialResult, Unreadable, read_record
from benchflow.util.atomic import write_json, write_text

from .reader import require_dir

GROUP_FIELDS = ("difficulty_level", "reward_mode_initial")


class DuplicateRollouts(UserError):
    """Several healthy rollouts of one task on a side, without --allow-duplicate-first-by-path."""


def exclusion(result: TrialResult) -> str | None:
    """Why a rollout is not healthy (``None`` when it is); ``healthy: false`` is a 0.7 export's extra key."""
    if (result.model_extra or {}).get("healthy") is False:
        return "unhealthy"
    if result.partial_trajectory:
        return "partial_trajectory"
    if result.reward is not None:
        return None
    for key, value in (("error", result.error), ("verifier_error", result.verifier_error),
                       ("export_error", result.export_error)):
        if value:
            return key
    return "unscored"


def _group_values(result: TrialResult) -> dict[str, Any]:
    """The GROUP_FIELDS a task set recorded (extra keys, at the top or under ``metadata``)."""
    extra = result.model_extra or {}
    meta = extra.get("metadata") if isinstance(extra.get("metadata"), dict) else {}
    return {f: extra.get(f, meta.get(f)) for f in GROUP_FIELDS if extra.get(f, meta.get(f)) is not None}


def load_side(root: Path, allow_duplicates: bool) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Healthy rollouts by task, and the coverage counts of the side."""
    require_dir(root, "a BenchFlow job folder")
    rollouts: list[tuple[str, Path, TrialResult]] = []
    unreadable = 0
    for path in sorted(root.rglob(TrialPaths(Path()).result.name)):
        if ".set-aside" in path.parts:
            continue
        try:
            result = read_record(TrialResult, path, name=path.parent.name)
        except Unreadable:
            unreadable += 1
            continue
        if result is not None:
            rollouts.append((result.task_name, path.parent, result))
    rollouts.sort(key=lambda item: (item[0], str(item[1])))
    healthy: dict[str, dict[str, Any]] = {}
    excluded: Counter[str] = Counter()
    duplicates: list[str] = []
    for task, folder, result in rollouts:
        reason = exclusion(result)
        if reason:
            excluded[reason] += 1
            continue
        if task in healthy:
            duplicates.append(task)
            continue
        healthy[task] = {"reward": result.reward, "path": str(folder), "groups": _group_values(result)}
    if duplicates and not allow_duplicates:
        shown = ", ".join(sorted(set(duplicates))[:5])
        raise DuplicateRollouts(f"{root}: several healthy rollouts of {len(set(duplicates))} task(s) ({shown}); "
                                "pass --allow-duplicate-first-by-path to keep the first by path")
    coverage = {"rollouts": len(rollouts), "healthy_tasks": len(healthy), "excluded": dict(sorted(excluded.items())),
                "duplicates_dropped": len(duplicates), "unreadable": unreadable}
    return healthy, coverage


def bootstrap_interval(deltas: list[float], samples: int, seed: int) -> dict[str, Any]:
    """Percentile interval of the mean of ``deltas`` over ``samples`` resamples (degenerate when n==1)."""
    block = {"confidence": 0.95, "method": "paired_nonparametric_bootstrap", "samples": samples, "seed": seed}
    n = len(deltas)
    if n == 0:
        return {"low": None, "high": None, **block}
    mean = math.fsum(deltas) / n
    if n == 1 or samples <= 0:
        return {"low": mean, "high": mean, **block}
    rng = random.Random(seed)
    means = sorted(math.fsum(deltas[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    return {"low": means[int(0.025 * (samples - 1))], "high": means[int(0.975 * (samples - 1))], **block}


def _figures(pairs: list[tuple[float, float]], samples: int, seed: int) -> dict[str, Any]:
    n = len(pairs)
    pass_deltas = [float(t == 1.0) - float(b == 1.0) for b, t in pairs]
    reward_deltas = [t - b for b, t in pairs]

    def mean(values: list[float]) -> float | None:
        return math.fsum(values) / len(values) if values else None

    return {
        "paired_count": n,
        "pass_rate_base": mean([float(b == 1.0) for b, _ in pairs]),
        "pass_rate_trained": mean([float(t == 1.0) for _, t in pairs]),
        "pass_rate_delta": mean(pass_deltas), "pass_rate_delta_ci": bootstrap_interval(pass_deltas, samples, seed),
        "mean_reward_base": mean([b for b, _ in pairs]), "mean_reward_trained": mean([t for _, t in pairs]),
        "mean_reward_delta": mean(reward_deltas),
        "mean_reward_delta_ci": bootstrap_interval(reward_deltas, samples, seed),
    }


def compare_lift(baseline: str | Path, trained: str | Path, *, samples: int = 1000, seed: int = 0,
                 allow_duplicates: bool = False) -> dict[str, Any]:
    """The lift report (JSON-ready dict, kind ``benchflow.compare-lift``)."""
    base, base_cov = load_side(Path(baseline), allow_duplicates)
    train, train_cov = load_side(Path(trained), allow_duplicates)
    paired = sorted(set(base) & set(train))
    pairs = [(base[t]["reward"], train[t]["reward"]) for t in paired]
    report: dict[str, Any] = {"kind": "benchflow.compare-lift", "schema_version": 1, "baseline": str(baseline),
                              "trained": str(trained)}
    report.update(_figures(pairs, samples, seed))
    groups: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for task in paired:
        for field, value in base[task]["groups"].items():
            groups.setdefault(field, {}).setdefault(str(value), []).append((base[task]["reward"], train[task]["reward"]))
    report["groups"] = {field: {value: _figures(members, samples, seed) for value, members in sorted(values.items())}
                        for field, values in groups.items()}
    report["coverage"] = {"baseline": base_cov, "trained": train_cov}
    report["baseline_only_healthy_tasks"] = sorted(set(base) - set(train))
    report["trained_only_healthy_tasks"] = sorted(set(train) - set(base))
    report["tasks"] = [{"task": t, "reward_base": base[t]["reward"], "reward_trained": train[t]["reward"],
                        "delta": train[t]["reward"] - base[t]["reward"]} for t in paired]
    return report


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def markdown(report: dict[str, Any]) -> str:
    ci_p, ci_r = report["pass_rate_delta_ci"], report["mean_reward_delta_ci"]
    lines = [
        "# Lift: trained vs baseline", "",
        f"- Baseline: `{report['baseline']}`", f"- Trained: `{report['trained']}`",
        f"- Paired tasks (healthy on both sides): {report['paired_count']}", "",
        "| metric | baseline | trained | delta | 95% CI |", "|---|---|---|---|---|",
        f"| pass rate | {_pct(report['pass_rate_base'])} | {_pct(report['pass_rate_trained'])} | "
        f"{_signed(report['pass_rate_delta'])} | [{_signed(ci_p['low'])}, {_signed(ci_p['high'])}] |",
        f"| mean reward | {_num(report['mean_reward_base'])} | {_num(report['mean_reward_trained'])} | "
        f"{_signed(report['mean_reward_delta'])} | [{_signed(ci_r['low'])}, {_signed(ci_r['high'])}] |", "",
        f"Interval: {ci_p['method']}, {ci_p['samples']} samples, seed {ci_p['seed']}.", "",
        "## Coverage", "", "| side | rollouts | healthy tasks | excluded |", "|---|---|---|---|",
    ]
    for side in ("baseline", "trained"):
        cov = report["coverage"][side]
        excluded = ", ".join(f"{k}: {v}" for k, v in cov["excluded"].items()) or "none"
        lines.append(f"| {side} | {cov['rollouts']} | {cov['healthy_tasks']} | {excluded} |")
    lines += ["", f"Healthy only on baseline: {len(report['baseline_only_healthy_tasks'])}; "
                  f"only on trained: {len(report['trained_only_healthy_tasks'])}."]
    for field, values in report["groups"].items():
        lines += ["", f"## By {field}", "", "| value | paired | pass delta | reward delta |", "|---|---|---|---|"]
        lines += [f"| {value} | {fig['paired_count']} | {_signed(fig['pass_rate_delta'])} | {_signed(fig['mean_reward_delta'])} |"
                  for value, fig in values.items()]
    return "\n".join(lines) + "\n"


def write_reports(report: dict[str, Any], out: Path, json_out: Path) -> None:
    write_text(out, markdown(report))
    write_json(json_out, report)
