"""What the check levels that run a task share: a control run through the engine,
grading a given workspace in a fresh sandbox, and writing a report.

A control run (oracle or nop) goes through ``benchflow.jobs`` exactly as
``bench run`` does, so the battery judges the same lifecycle users get. Grading
a workspace skips the agent: it starts a sandbox for the task, makes the
workdir hold exactly the given folder's files and runs the task's verifier there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError
from benchflow.jobs.layout import JobPaths, TrialPaths
from benchflow.records import TrialResult, Unreadable, read_record
from benchflow.util import atomic

REWARD_TOL = 1e-9


@dataclass
class ControlRun:
    """One finished trial of a control agent, read back from its job folder."""

    agent: str
    sandbox: str
    trial_dir: Path | None
    result: TrialResult | None
    """The trial's result; None when it did not finish."""

    @property
    def reward(self) -> float | None:
        return self.result.reward if self.result is not None else None

    @property
    def error(self) -> str | None:
        if self.result is None:
            return "the trial did not finish (no result.json)"
        return self.result.error or self.result.verifier_error

    @property
    def workspace(self) -> Path | None:
        """The frozen workspace (runs with ``freeze=True``), before the verifier touched it."""
        return None if self.trial_dir is None else TrialPaths(self.trial_dir).evidence_workspace


def run_control(task_dir: Path, agent: str, sandbox: str | None, jobs_dir: Path, *,
                freeze: bool = False) -> ControlRun:
    """Run ``agent`` (oracle or nop) once on the task through the run engine.

    Raises:
        BenchError: the run was refused or could not start (the engine's own errors).
    """
    from benchflow.jobs.public import run

    outcome = run(str(task_dir), agent=agent, sandbox=sandbox, jobs_dir=str(jobs_dir),
                  freeze_workspace=freeze, concurrency=1, quiet=True)
    finished = sorted((t for t in JobPaths(outcome.job_dir).trials() if t.result.is_file()),
                      key=lambda t: t.result.stat().st_mtime)
    if not finished:
        return ControlRun(agent, outcome.plan.sandbox, None, None)
    try:
        result = read_record(TrialResult, finished[-1].result, name=finished[-1].name)
    except Unreadable:
        result = None
    return ControlRun(agent, outcome.plan.sandbox, finished[-1].root, result)


def is_one(reward: float | None) -> bool:
    return reward is not None and abs(float(reward) - 1.0) <= REWARD_TOL


async def grade_workspace(task: Any, backend_name: str, workspace: Path, out_dir: Path, *,
                          remove: Sequence[str] = (), labels: dict[str, str] | None = None,
                          ) -> tuple[float | None, str | None]:
    """(reward, error) of the task's verifier over ``workspace`` in a fresh sandbox.

    The fresh workdir holds the image's files; ``remove`` (workdir-relative) drops the ones the
    graded workspace lacks, then ``workspace`` is copied over it.

    Never raises for sandbox or verifier failures: they come back as the error.
    """
    from benchflow.sandbox import get_backend
    from benchflow.sandbox.fit import fitted
    from benchflow.sandbox.from_task import spec_for_task
    from benchflow.sandbox.session import SessionSetupError, sandbox_session
    from benchflow.verify.runner import run_verifier

    spec = spec_for_task(task, labels={"benchflow.task": task.name, **(labels or {})})
    out_dir.mkdir(parents=True, exist_ok=True)
    backend = get_backend(backend_name)
    try:
        async with sandbox_session(backend, await fitted(backend, spec)) as session:
            sandbox = session.sandbox
            workdir = sandbox.workdir
            if remove:
                paths = [f"{workdir.rstrip('/')}/{rel}" for rel in remove]
                removed = await sandbox.exec(["rm", "-f", "--", *paths], timeout=120)
                if not removed.success:
                    return None, f"could not remove files from {workdir}: {removed.stderr.strip()[-300:]}"
            await sandbox.put(workspace, workdir)
            outcome = await run_verifier(sandbox, task, out_dir, workdir=workdir, agent_user=spec.sandbox_user,
                                         task_name=task.name)
    except SessionSetupError as exc:
        return None, f"sandbox failed: {exc.cause}"
    except BenchError as exc:
        return None, f"sandbox failed: {exc}"
    reward = (outcome.rewards or {}).get("reward")
    return reward, outcome.error


def write_report(path: Path, document: dict[str, Any], *, sidecar: bool = False) -> None:
    """Write ``document`` as JSON; with ``sidecar``, also ``<path>.sha256`` in ``sha256sum`` format."""
    data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    atomic.write_bytes(path, data)
    if sidecar:
        atomic.write_text(Path(f"{path}.sha256"), f"{hashlib.sha256(data).hexdigest()}  {path.name}\n")
