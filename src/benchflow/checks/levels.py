"""The check levels that run a task (equivalence, acceptance-live), for one task or a folder.

Each task is first checked statically (structural, plus the sandbox's runtime
capabilities); only a task that passes is run. ``bench tasks check`` calls
:func:`run_level` and only prints what comes back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError, TaskError, UserError

from .live import write_report

LEVELS = ("equivalence", "acceptance-live")


@dataclass
class LevelOutcome:
    name: str
    path: Path
    issues: list[str] = field(default_factory=list)
    """Why the task could not be run, or why it failed (the report's verdict)."""
    warnings: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None
    written: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.issues and bool(self.report and self.report["ok"])


def _run_one(task_dir: Path, level: str, sandbox: str, report_output: Path | None,
             write: bool) -> LevelOutcome:
    from .acceptance_live import run_acceptance_live
    from .battery import run_equivalence

    outcome = LevelOutcome(task_dir.name, task_dir)
    try:
        if level == "equivalence":
            outcome.report = run_equivalence(task_dir, sandbox)
            target = report_output if write else None
            if not outcome.report["ok"]:
                outcome.issues.append(outcome.report["verdict"])
        else:
            outcome.report, declared = run_acceptance_live(task_dir, sandbox)
            target = (report_output or declared) if write else None
            outcome.issues += [f"case {r['name']} ({r['agent']}) scored {r['reward']}"
                               + (f" ({r['error']})" if r["error"] else "") + f", expected {r['expect']}"
                               for r in outcome.report["cases"] if not r["ok"]]
    except BenchError as exc:
        if exc.exit_code != 1:  # bad input (2) and Ctrl-C (130) stop the whole check
            raise
        outcome.issues.append(str(exc))
        return outcome
    if target is not None:
        write_report(target, outcome.report, sidecar=level == "acceptance-live")
        outcome.written.append(target)
        if level == "acceptance-live":
            outcome.written.append(Path(f"{target}.sha256"))
    return outcome


def _refuse_early(task_dir: Path, level: str) -> None:
    """Refuse a task that cannot be run at ``level`` before any sandbox starts (TaskError, exit 2)."""
    from benchflow.tasks import load_task

    from .acceptance_live import live_spec

    task = load_task(task_dir)
    oracle_cases = [c.name for c in live_spec(task.document).cases if c.agent == "oracle"] \
        if level == "acceptance-live" else ["the battery"]
    if oracle_cases and not task.paths.solve_path.is_file():
        raise TaskError(f"{task.name}: no oracle/solve.sh, but {oracle_cases[0]} runs the oracle; "
                        "add the reference solution")


def run_level(path: str | Path, level: str, sandbox: str | None = None, *,
              report_output: str | Path | None = None, write: bool = True) -> list[LevelOutcome]:
    """Check and run every task at ``path`` (a task folder or a folder of tasks) at ``level``.

    ``report_output`` replaces the task-declared acceptance-live report path, and is where the
    equivalence report goes (it is not written without it); ``write=False`` writes nothing.

    Raises:
        UserError: nothing to check, or ``report_output`` with several tasks.
        TaskError: a task without an oracle (equivalence) or with malformed live cases.
        ConfigError: an unknown level or sandbox name.
    """
    from benchflow.sandbox import default_backend_name
    from benchflow.tasks.batch import check_tasks

    from .target import runtime_target

    if level not in LEVELS:
        raise UserError(f"--level {level}: not a level that runs the task; use one of: {', '.join(LEVELS)}")
    backend = sandbox or default_backend_name()
    reports = check_tasks(path, level="structural", runtime=runtime_target(backend))
    if report_output is not None and write and len(reports) > 1:
        raise UserError(f"--report-output: {path} holds {len(reports)} tasks; give one task folder "
                        "(each task writes its own report)")
    for report in reports:
        if report.ok:
            _refuse_early(report.path, level)
    out: list[LevelOutcome] = []
    for report in reports:
        if not report.ok:
            out.append(LevelOutcome(report.name, report.path, issues=list(report.issues),
                                    warnings=list(report.warnings)))
            continue
        outcome = _run_one(report.path, level, backend, Path(report_output) if report_output else None, write)
        outcome.warnings[:0] = report.warnings
        out.append(outcome)
    return out
