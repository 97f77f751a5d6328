"""``compare``: two jobs paired by task, with fair denominators and a settings check (contracts §4.6).

Each paired task is checked for comparable settings, read from each trial's
``config.json`` (``result.json`` for the digest when config lacks it) and
``prompts.json``. A difference in a setting not declared with ``vary`` is a
*mismatch*: warned about (default), raised (exit 1) or ignored.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Iterable

from benchflow.errors import BenchError, ConfigError
from benchflow.jobs.layout import TrialPaths
from benchflow.records import TrialConfig, TrialResult, Unreadable, read_json, read_record

from . import metrics
from .documents import (
    Comparison,
    ComparisonRow,
    ComparisonSide,
    JobDocument,
    TrialSummary,
)
from .job import load_job, parse_by, split_controls
from .outcome import denominators
from .paired import paired_test

SETTINGS = ("task_digest", "model", "harness", "dataset", "reasoning_effort", "sandbox", "sandbox_user",
            "timeout", "agent_env", "prompts")
ALIASES = {"digest": "task_digest", "agent": "harness", "effort": "reasoning_effort", "env": "agent_env",
           "agent_env": "agent_env", "agent-env": "agent_env", "user": "sandbox_user", "timeout_sec": "timeout",
           "task-digest": "task_digest", "reasoning-effort": "reasoning_effort", "sandbox-user": "sandbox_user",
           "prompt": "prompts", "environment": "sandbox"}
MISMATCH_MODES = ("warn", "raise", "ignore")


class SettingMismatchError(BenchError):
    """``on_mismatch='raise'`` and the sides differ in an undeclared setting (exit 1)."""

    category = "setting_mismatch"
    exit_code = 1

    def __init__(self, message: str, comparison: Comparison) -> None:
        super().__init__(message)
        self.comparison = comparison


def parse_vary(vary: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in vary:
        for part in str(item).split(","):
            name = part.strip().lower()
            if not name:
                continue
            name = ALIASES.get(name, name)
            if name not in SETTINGS:
                raise ConfigError(f"--vary {part.strip()}: unknown setting; use any of {', '.join(SETTINGS)}")
            if name not in out:
                out.append(name)
    return out


def _read(model: type, path: Path, name: str) -> Any:
    try:
        return read_record(model, path, name=name)
    except Unreadable:
        return None


def _seconds(value: float | None) -> float | int | None:
    """900.0 shown as 900, as the config said it."""
    return int(value) if value is not None and value.is_integer() else value


def trial_settings(path: str | Path) -> dict[str, Any]:
    """The compared settings of one trial (``None`` where not recorded).

    ``agent_version``, ``dataset_name``/``dataset_version`` and ``sandbox`` are
    keys BenchFlow 0.7 and 0.10 wrote that this version does not: read as the
    records' extra keys.
    """
    trial = TrialPaths(Path(path))
    config: TrialConfig = _read(TrialConfig, trial.config, trial.name) or TrialConfig()
    result: TrialResult | None = _read(TrialResult, trial.result, trial.name) if not config.task_digest else None
    extra, result_extra = config.model_extra or {}, (result.model_extra or {}) if result else {}
    digest = config.task_digest or (result.task_digest if result else None)
    agent = config.agent or (result.agent if result else None)
    harness = None
    if agent:
        harness = agent + (f"/{config.harness_mode}" if config.harness_mode else "")
        version = config.agent_version or result_extra.get("agent_version")
        harness += f"@{version}" if version else ""
    dataset = extra.get("dataset_name") or result_extra.get("dataset_name")
    dataset_version = extra.get("dataset_version") or result_extra.get("dataset_version")
    if dataset and dataset_version:
        dataset += "@" + str(dataset_version)
    try:
        prompts = read_json(trial.prompts)
    except Unreadable:
        prompts = None
    prompt_hash = config.prompts_sha256
    if prompts is not None:
        prompt_hash = "sha256:" + hashlib.sha256(json.dumps(prompts).encode()).hexdigest()
    env = config.agent_env
    return {
        "task_digest": digest, "model": config.model or (result.model if result else None), "harness": harness,
        "dataset": dataset, "reasoning_effort": config.reasoning_effort,
        "sandbox": config.environment or extra.get("sandbox"), "sandbox_user": config.sandbox_user,
        "timeout": _seconds(config.timeout_sec),
        "agent_env": json.dumps(env, sort_keys=True) if env else None,
        "prompts": prompt_hash,
    }


def _values(trials: list[TrialSummary], cache: dict[str, dict[str, Any]]) -> dict[str, list[Any]]:
    out: dict[str, set[str]] = {name: set() for name in SETTINGS}
    for trial in trials:
        settings = cache.setdefault(trial.path, trial_settings(trial.path))
        for name, value in settings.items():
            if value is not None:
                out[name].add(value if isinstance(value, str) else json.dumps(value))
    return {name: sorted(values) for name, values in out.items()}


def _mean_reward(trials: list[TrialSummary]) -> float | None:
    rewards = [t.reward for t in trials if t.reward is not None]
    return math.fsum(rewards) / len(rewards) if rewards else None


def _load(side: str | Path | JobDocument, attempts: str, include_controls: bool) -> JobDocument:
    if isinstance(side, JobDocument):
        return side
    return load_job(side, attempts=attempts, include_controls=include_controls)


def _key(trial: TrialSummary, by: list[str]) -> tuple[Any, ...]:
    return (trial.task_name, *(getattr(trial, key) for key in by))


def compare(a: str | Path | JobDocument, b: str | Path | JobDocument, by: str | Iterable[str] | None = None,
            vary: Iterable[str] = (), *, on_mismatch: str = "warn", labels: tuple[str, str] | None = None,
            include_controls: bool = False, attempts: str = "best", ks: Iterable[int] | None = None,
            solve_threshold: float | None = None) -> Comparison:
    """Pair the trials of two jobs by task (and ``by`` keys) and check their settings.

    Raises:
        ConfigError: an unknown ``vary``/``by`` name or ``on_mismatch`` mode (exit 2).
        SettingMismatchError: ``on_mismatch='raise'`` and an undeclared setting differs (exit 1);
            the comparison is attached as ``.comparison``.
    """
    if on_mismatch not in MISMATCH_MODES:
        raise ConfigError(f"--on-mismatch {on_mismatch}: use warn, raise or ignore")
    keys = parse_by(by)
    declared = parse_vary(vary)
    job_a, job_b = _load(a, attempts, include_controls), _load(b, attempts, include_controls)
    side_trials = []
    for job in (job_a, job_b):
        counted, _ = split_controls([t for t in job.trials if t.finished], include_controls)
        grouped: dict[tuple[Any, ...], list[TrialSummary]] = {}
        for trial in counted:
            grouped.setdefault(_key(trial, keys), []).append(trial)
        side_trials.append(grouped)
    grouped_a, grouped_b = side_trials
    cache: dict[str, dict[str, Any]] = {}
    rows: list[ComparisonRow] = []
    pairs: list[tuple[str, list[TrialSummary], list[TrialSummary]]] = []  # each paired row's trials, for the test
    mismatches: list[dict[str, Any]] = []
    differing: set[str] = set()
    for key in sorted(set(grouped_a) | set(grouped_b), key=lambda k: tuple(str(v) for v in k)):
        ta, tb = grouped_a.get(key, []), grouped_b.get(key, [])
        status = "paired" if ta and tb else ("only_a" if ta else "only_b")
        reward_a, reward_b = _mean_reward(ta), _mean_reward(tb)
        checks = []
        if status == "paired":
            va, vb = _values(ta, cache), _values(tb, cache)
            for name in SETTINGS:
                match = None if not va[name] and not vb[name] else va[name] == vb[name]
                checks.append({"setting": name, "a": va[name], "b": vb[name], "match": match})
                if match is False:
                    differing.add(name)
                    if name not in declared:
                        mismatches.append({"task": key[0], "setting": name, "a": va[name], "b": vb[name]})
        rows.append(ComparisonRow(
            task=key[0], group=dict(zip(keys, key[1:])) if keys else None, status=status,
            n_a=len(ta), n_b=len(tb), scored_a=sum(t.reward is not None for t in ta),
            scored_b=sum(t.reward is not None for t in tb), reward_a=reward_a, reward_b=reward_b,
            delta=reward_b - reward_a if reward_a is not None and reward_b is not None else None, checks=checks))
        if status == "paired":
            pairs.append((key[0], ta, tb))
    paired = [r for r in rows if r.status == "paired"]
    deltas = [r.delta for r in paired if r.delta is not None]
    paired_keys = {(r.task, *(r.group or {}).values()) for r in paired}
    paired_a = [t for k in paired_keys for t in grouped_a.get(k, [])]
    paired_b = [t for k in paired_keys for t in grouped_b.get(k, [])]
    rate_a = metrics.solve_rates(paired_a, ks=ks, solve_threshold=solve_threshold)
    rate_b = metrics.solve_rates(paired_b, ks=ks, solve_threshold=solve_threshold)
    label_a, label_b = labels or (job_a.name, job_b.name if job_b.name != job_a.name else f"{job_b.name} (B)")
    caveats = _caveats(paired, declared, differing, mismatches, on_mismatch)
    comparison = Comparison(
        a=ComparisonSide(label=label_a, path=job_a.path, denominators=job_a.denominators,
                         solve_rates=job_a.solve_rates),
        b=ComparisonSide(label=label_b, path=job_b.path, denominators=job_b.denominators,
                         solve_rates=job_b.solve_rates),
        a_paired=denominators(paired_a), b_paired=denominators(paired_b), vary=declared, by=keys,
        include_controls=include_controls, attempts=job_a.attempts, solve_threshold=solve_threshold,
        pass_at_k={"a": {"pass_at_k": rate_a["pass_at_k"], "pass_hat_k": rate_a["pass_hat_k"]},
                   "b": {"pass_at_k": rate_b["pass_at_k"], "pass_hat_k": rate_b["pass_hat_k"]}},
        summary={
            "tasks": len(rows), "paired": len(paired), "only_a": sum(r.status == "only_a" for r in rows),
            "only_b": sum(r.status == "only_b" for r in rows), "both_scored": len(deltas),
            "same_reward": sum(d == 0 for d in deltas), "b_higher": sum(d > 0 for d in deltas),
            "b_lower": sum(d < 0 for d in deltas),
            "mean_delta": math.fsum(deltas) / len(deltas) if deltas else None,
            "one_run_per_side": all(r.n_a == 1 and r.n_b == 1 for r in paired),
            "setting_mismatches": len(mismatches),
        },
        rows=rows, setting_mismatches=mismatches, caveats=caveats, settings_diff=_settings_diff(paired),
        error_shares={"a": _shares(paired_a), "b": _shares(paired_b)},
        paired_test=paired_test(pairs, solve_threshold),
    )
    if mismatches and on_mismatch == "raise":
        raise SettingMismatchError(_mismatch_line(mismatches), comparison)
    return comparison


def _settings_diff(paired: list[ComparisonRow]) -> list[dict[str, Any]]:
    """Each setting that differs on a paired task, with the values each side had and on how many tasks."""
    out: dict[str, dict[str, Any]] = {}
    for row in paired:
        for check in row.checks:
            if check["match"] is False:
                entry = out.setdefault(check["setting"], {"setting": check["setting"], "a": set(), "b": set(),
                                                          "tasks": 0})
                entry["a"].update(check["a"])
                entry["b"].update(check["b"])
                entry["tasks"] += 1
    return [{**e, "a": sorted(e["a"]), "b": sorted(e["b"])} for name in SETTINGS if (e := out.get(name))]


def _shares(trials: list[TrialSummary]) -> dict[str, float]:
    finished = [t for t in trials if t.finished]
    counts: dict[str, int] = {}
    for trial in finished:
        category = trial.error_category or trial.verifier_error_category
        if category:
            counts[category] = counts.get(category, 0) + 1
    return {name: n / len(finished) for name, n in sorted(counts.items())}


def _mismatch_line(mismatches: list[dict[str, Any]]) -> str:
    settings = sorted({m["setting"] for m in mismatches})
    tasks = len({m["task"] for m in mismatches})
    return (f"the sides differ in {', '.join(settings)} on {tasks} paired task(s), not declared with --vary; "
            f"declare it (--vary {settings[0]}) if the comparison is about it")


def _caveats(paired: list[ComparisonRow], declared: list[str], differing: set[str],
             mismatches: list[dict[str, Any]], on_mismatch: str) -> list[str]:
    caveats = []
    if not paired:
        caveats.append("no task ran on both sides: nothing is paired")
    if mismatches and on_mismatch != "ignore":
        caveats.append(_mismatch_line(mismatches))
    for name in declared:
        if name not in differing and paired:
            caveats.append(f"--vary {name}: the paired tasks do not differ in {name}")
    if any(r.n_a > 1 or r.n_b > 1 for r in paired):
        caveats.append("some tasks have several runs on a side: rewards are means over those runs")
    return caveats
