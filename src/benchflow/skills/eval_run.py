"""``bench skills eval``: each agent (with its model) on the skill's cases, with the skill and without.

Both runs go through the ordinary run engine (:func:`benchflow.jobs.api.run`) on the same generated
tasks: the with-skill run as ``--skill-mode with-skill --skills-dir <the staged skill>``, the
baseline as ``no-skill``. Everything lands in one folder,
``<jobs-dir>/skill-eval/<skill>/<UTC time>/``: ``tasks/`` (kept, so ``bench regrade`` and
``bench view`` work on the trials), ``skills/`` (the skill as deployed), ``jobs/`` with one
ordinary job folder per agent and side (``<label>__with-skill``, ``<label>__baseline``), and
``skill-eval.json`` (the report, written last).

Lift is paired over cases: the mean over cases scored on both sides of (passed with the skill) −
(passed without), with a 95% paired nonparametric bootstrap interval (seeded, so a report is the
same on every machine; :func:`benchflow.results.lift.bootstrap_interval`). A trial with no score
(an error, a verifier error) is counted on neither side and listed as unscored.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError
from benchflow.util import atomic

from .eval_judge import JudgeRoute
from .evals_file import EvalSet

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0
REPORT_NAME = "skill-eval.json"


@dataclass(frozen=True)
class Contender:
    agent: str
    model: str | None

    @property
    def label(self) -> str:
        path = Path(self.agent)
        name = path.stem if self.agent.endswith(".toml") else self.agent
        text = name + (f"@{self.model}" if self.model else "")
        return re.sub(r"[^A-Za-z0-9._@-]+", "-", text).strip("-") or "agent"


def pair_up(agents: list[str], models: list[str]) -> list[Contender]:
    """Models matched 1:1 with agents; one model is used for every agent; none: each agent's default.

    Raises:
        ConfigError: no agent, or a model count that is neither 0, 1 nor the agent count.
    """
    if not agents:
        raise ConfigError("--agent is required: give the agent(s) to evaluate (repeatable)")
    if models and len(models) not in (1, len(agents)):
        raise ConfigError(f"--model given {len(models)} times for {len(agents)} agent(s): give one model for all, "
                          "or one per --agent in the same order")
    matched = models * len(agents) if len(models) == 1 else models or [None] * len(agents)
    out = [Contender(a, m) for a, m in zip(agents, matched)]
    labels = [c.label for c in out]
    if len(set(labels)) != len(labels):
        raise ConfigError("the same --agent/--model pair is given twice; give each once")
    return out


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _side(job_dir: Path) -> tuple[dict[str, float], dict[str, str]]:
    """Case task name -> reward of its healthy trial, and -> its trial folder."""
    from benchflow.results.lift import load_side

    healthy, _coverage = load_side(job_dir, allow_duplicates=True)
    return ({task: row["reward"] for task, row in healthy.items()},
            {task: row["path"] for task, row in healthy.items()})


def figures(evals: EvalSet, with_skill: dict[str, float], baseline: dict[str, float] | None) -> dict[str, Any]:
    """Pass rates per side, and the paired lift with its interval (None without a baseline)."""
    from benchflow.results.lift import bootstrap_interval

    names = [c.task_name for c in evals.cases]

    def side(rewards: dict[str, float]) -> dict[str, Any]:
        scored = [n for n in names if n in rewards]
        passed = sum(rewards[n] == 1.0 for n in scored)
        return {"scored": len(scored), "passed": passed, "pass_rate": _mean([float(rewards[n] == 1.0) for n in scored]),
                "mean_reward": _mean([rewards[n] for n in scored]),
                "unscored": [n for n in names if n not in rewards]}

    out: dict[str, Any] = {"with_skill": side(with_skill), "baseline": None, "lift": None}
    if baseline is None:
        return out
    out["baseline"] = side(baseline)
    paired = [n for n in names if n in with_skill and n in baseline]
    deltas = [float(with_skill[n] == 1.0) - float(baseline[n] == 1.0) for n in paired]
    interval = bootstrap_interval(deltas, BOOTSTRAP_SAMPLES, BOOTSTRAP_SEED)
    out["lift"] = {"paired": len(paired), "pass_rate_delta": _mean(deltas), "ci": interval}
    return out


def eval_root(jobs_dir: str, skill: str) -> Path:
    from .eval_tasks import folder_name

    stamp = time.strftime("%Y-%m-%d__%H-%M-%S", time.gmtime())
    root = Path(jobs_dir).expanduser() / "skill-eval" / folder_name(skill) / stamp
    suffix = 1
    while root.exists():
        suffix += 1
        root = root.with_name(f"{stamp}-{suffix}")
    return root


def run_eval(evals: EvalSet, contenders: list[Contender], *, sandbox: str, concurrency: int, jobs_dir: str,
             baseline: bool, judge: JudgeRoute | None = None,
             say: Callable[[str], None] = lambda _l: None) -> dict[str, Any]:
    """Run every contender with the skill (and without), write and return the report; ``judge`` (for
    an eval set with a judge model) scores the sentence-only cases, its provider variables allowed."""
    from benchflow.jobs.api import run
    from benchflow.jobs.feature_settings import SkillSettings
    from benchflow.jobs.spec import RunSpec

    from .eval_tasks import stage_skill, write_tasks

    root = eval_root(jobs_dir, evals.skill_name)
    tasks = write_tasks(evals, root / "tasks", judge)
    skills = stage_skill(evals, root / "skills")
    rows = []
    for contender in contenders:
        sides: dict[str, Any] = {}
        for mode in ("with-skill", "baseline") if baseline else ("with-skill",):
            say(f"{contender.label}: {mode}, {len(evals.cases)} case(s) on {sandbox}")
            spec = RunSpec(targets=[str(tasks)], agent=contender.agent, model=contender.model, sandbox=sandbox,
                           concurrency=concurrency, jobs_dir=str(root / "jobs"), job_name=f"{contender.label}__{mode}",
                           skills=SkillSettings(mode="with-skill" if mode == "with-skill" else "no-skill",
                                                dir=str(skills) if mode == "with-skill" else None), quiet=True,
                           allow_task_env=list(judge.env_names) if judge else [])
            outcome = run(spec)
            rewards, trials = _side(outcome.job_dir)
            sides[mode] = {"job_dir": str(outcome.job_dir), "rewards": rewards, "trials": trials}
        with_side, base_side = sides["with-skill"], sides.get("baseline")
        row = {"agent": contender.agent, "model": contender.model, "label": contender.label,
               **figures(evals, with_side["rewards"], base_side["rewards"] if base_side else None),
               "jobs": {mode: side["job_dir"] for mode, side in sides.items()},
               "cases": [{"id": c.id, "task": c.task_name,
                          "with_skill": with_side["rewards"].get(c.task_name),
                          "baseline": base_side["rewards"].get(c.task_name) if base_side else None,
                          "scored_by": "judge" if evals.judged(c) else "checks",
                          "trials": {mode: side["trials"].get(c.task_name) for mode, side in sides.items()}}
                         for c in evals.cases]}
        rows.append(row)
    report = {"kind": "benchflow.skill-eval", "schema_version": 1, "skill": evals.skill_name,
              "skill_dir": str(evals.skill_dir), "evals_file": str(evals.file), "eval_dir": str(root),
              "sandbox": sandbox, "baseline": baseline, "cases": len(evals.cases),
              "judge_model": evals.judge_model,
              "unscored_cases": [{"id": c.id, "reason": "only plain-sentence expectations (need --judge-model)"}
                                 for c in evals.unscored],
              "interval": {"confidence": 0.95, "method": "paired_nonparametric_bootstrap",
                           "samples": BOOTSTRAP_SAMPLES, "seed": BOOTSTRAP_SEED},
              "results": rows}
    atomic.write_json(root / REPORT_NAME, report)
    return report


def complete(report: dict[str, Any]) -> bool:
    """True when every case of every run has a score (the exit code is 1 otherwise)."""
    return all(not (row[side] or {}).get("unscored") for row in report["results"] for side in ("with_skill", "baseline"))
