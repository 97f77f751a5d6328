"""``bench tasks check --level acceptance-live``: run a task's live acceptance cases.

The cases live in task.md under ``benchflow.evidence.acceptance_live``::

    benchflow:
      evidence:
        acceptance_live:
          report: evidence/acceptance-live-report.json   # task-relative (this is the default)
          oracle_reruns: 2        # extra oracle runs, each must score 1.0 (default 0)
          calibration: true       # the generated cases below (default: true when no cases are declared)
          cases:
            - name: reference     # unique; letters, digits, . _ -
              agent: oracle       # oracle or nop (the agents that need no model)
              expect: {min_reward: 1.0}          # min_reward and/or max_reward, inclusive
            - name: no-op
              agent: nop
              expect: {max_reward: 0.0}

Generated calibration cases: ``calibration-reference`` (oracle, reward >= 1.0)
and ``calibration-no-op`` (nop, reward <= 0.0). A case passes when its trial
was scored and the reward lies within its bounds. Every case is one trial run
through the engine, exactly as ``bench run`` runs it.
"""

from __future__ import annotations

import datetime as dt
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from benchflow.errors import TaskError

from .live import REWARD_TOL, run_control

KIND = "benchflow.acceptance-live-report"
SCHEMA_VERSION = 1
DEFAULT_REPORT = "evidence/acceptance-live-report.json"
AGENTS = ("oracle", "nop")
FIELD = "benchflow.evidence.acceptance_live"
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Case:
    name: str
    agent: str
    min_reward: float | None
    max_reward: float | None
    source: str
    """``declared``, ``oracle-rerun`` or ``calibration``."""

    def judge(self, reward: float | None) -> bool:
        if reward is None:
            return False
        low = self.min_reward is None or reward >= self.min_reward - REWARD_TOL
        high = self.max_reward is None or reward <= self.max_reward + REWARD_TOL
        return low and high

    @property
    def expect(self) -> dict[str, float]:
        bounds = {"min_reward": self.min_reward, "max_reward": self.max_reward}
        return {k: v for k, v in bounds.items() if v is not None}


@dataclass(frozen=True)
class LiveSpec:
    cases: list[Case]
    report: str


def _bound(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TaskError(f"task.md: {where}: must be a number (a reward bound); fix the value")
    return float(value)


def _case(raw: Any, i: int) -> Case:
    where = f"{FIELD}.cases[{i}]"
    if not isinstance(raw, dict):
        raise TaskError(f"task.md: {where}: must be a mapping with name, agent and expect")
    unknown = sorted(set(raw) - {"name", "agent", "expect"})
    if unknown:
        raise TaskError(f"task.md: {where}.{unknown[0]}: unknown key; a case has name, agent and expect")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise TaskError(f"task.md: {where}.name: give a name of letters, digits, '.', '_' or '-'")
    agent = raw.get("agent", "oracle")
    if agent not in AGENTS:
        raise TaskError(f"task.md: {where}.agent: {agent!r} is not a live-case agent; use oracle or nop")
    expect = raw.get("expect")
    if not isinstance(expect, dict) or not expect or set(expect) - {"min_reward", "max_reward"}:
        raise TaskError(f"task.md: {where}.expect: give min_reward and/or max_reward, e.g. {{min_reward: 1.0}}")
    low = _bound(expect.get("min_reward"), f"{where}.expect.min_reward")
    high = _bound(expect.get("max_reward"), f"{where}.expect.max_reward")
    if low is not None and high is not None and low > high:
        raise TaskError(f"task.md: {where}.expect: min_reward {low:g} is above max_reward {high:g}; swap them")
    return Case(name, agent, low, high, "declared")


def _report_path(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TaskError(f"task.md: {FIELD}.report: give a task-relative file path, e.g. {DEFAULT_REPORT}")
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts:
        raise TaskError(f"task.md: {FIELD}.report: {value!r} must stay inside the task folder "
                        "(relative, no '..'); use --report-output for another place")
    return path.as_posix()


def live_spec(document: dict[str, Any]) -> LiveSpec:
    """The live cases a task declares (normalized frontmatter), calibration and reruns included.

    Raises:
        TaskError: a malformed ``benchflow.evidence.acceptance_live`` block.
    """
    evidence = ((document.get("benchflow") or {}).get("evidence") or {})
    block = evidence.get("acceptance_live") or {}
    if not isinstance(block, dict):
        raise TaskError(f"task.md: {FIELD}: must be a mapping (cases, oracle_reruns, calibration, report)")
    unknown = sorted(set(block) - {"cases", "oracle_reruns", "calibration", "report"})
    if unknown:
        raise TaskError(f"task.md: {FIELD}.{unknown[0]}: unknown key; use cases, oracle_reruns, "
                        "calibration or report")
    raw_cases = block.get("cases") or []
    if not isinstance(raw_cases, list):
        raise TaskError(f"task.md: {FIELD}.cases: must be a list of cases")
    cases = [_case(raw, i) for i, raw in enumerate(raw_cases)]
    reruns = block.get("oracle_reruns", 0)
    if isinstance(reruns, bool) or not isinstance(reruns, int) or not 0 <= reruns <= 20:
        raise TaskError(f"task.md: {FIELD}.oracle_reruns: give a whole number from 0 to 20")
    calibration = block.get("calibration", not cases)
    if not isinstance(calibration, bool):
        raise TaskError(f"task.md: {FIELD}.calibration: must be true or false")
    cases += [Case(f"oracle-rerun-{i + 1}", "oracle", 1.0, None, "oracle-rerun") for i in range(reruns)]
    if calibration:
        cases += [Case("calibration-reference", "oracle", 1.0, None, "calibration"),
                  Case("calibration-no-op", "nop", None, 0.0, "calibration")]
    names = [c.name for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TaskError(f"task.md: {FIELD}.cases: the name {dupes[0]!r} is used twice; rename one")
    if not cases:
        raise TaskError(f"task.md: {FIELD}: no case to run (calibration is false and no cases are "
                        "declared); declare cases or drop 'calibration: false'")
    return LiveSpec(cases, _report_path(block.get("report", DEFAULT_REPORT)))


def run_acceptance_live(task_dir: str | Path, sandbox: str | None = None) -> tuple[dict[str, Any], Path]:
    """Run every live case once; returns (the report, the task-declared report path). Writes nothing.

    Raises:
        TaskError: the task does not load or its case block is malformed.
        BenchError: the engine refused or could not run a case.
    """
    from benchflow.tasks import load_task

    task_path = Path(task_dir)
    task = load_task(task_path)
    spec = live_spec(task.document)
    digest = task.digest()
    rows: list[dict[str, Any]] = []
    used_sandbox = sandbox
    with tempfile.TemporaryDirectory(prefix="benchflow-acceptance-live-", ignore_cleanup_errors=True) as tmp:
        for i, case in enumerate(spec.cases):
            run = run_control(task_path, case.agent, used_sandbox, Path(tmp) / f"{i:02d}-{case.name}")
            used_sandbox = run.sandbox
            rows.append({"name": case.name, "source": case.source, "agent": case.agent, "expect": case.expect,
                         "reward": run.reward, "error": run.error, "ok": case.judge(run.reward)})
    failed = [r["name"] for r in rows if not r["ok"]]
    report = {"kind": KIND, "schema_version": SCHEMA_VERSION, "task": task.name, "task_path": str(task_path),
              "task_digest": digest, "sandbox": used_sandbox,
              "created_at": dt.datetime.now(dt.timezone.utc).isoformat(), "cases": rows,
              "passed": len(rows) - len(failed), "failed": len(failed), "ok": not failed}
    return report, task_path / spec.report
