"""``run_branch``: the one library call behind ``bench branch`` / ``bench eval branch``.

Plan (tasks, prompts, backend; refused when the backend has no snapshots) →
open or resume the job folder (``branch-<time>``; a rerun of the same request
finishes its latest unfinished job) → remove what a killed earlier run left
(sandboxes, unretained snapshots) → one branched trial per task, one after
another → ``summary.json``. Exit code 0 when every child ended with a verdict,
1 when some did not, 130 on Ctrl-C / SIGTERM (everything removed, resumable).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchflow.jobs.job import lock_job
from benchflow.jobs.layout import JobPaths, TrialPaths, trial_name
from benchflow.records import EvaluationRecord, read_json, write_record
from benchflow.util.signals import sigterm_cancels_current_task

from .checkpoint import start_snapshot
from .plan import BranchPlan, plan_branch
from .spec import BranchSpec
from .tree import TreeFile, new_tree

if TYPE_CHECKING:
    from benchflow.jobs.plan import PlannedTask
    from benchflow.jobs.trial_request import TrialRequest

Event = dict[str, Any]


@dataclass
class BranchOutcome:
    job_dir: Path
    exit_code: int
    trials: list[Path]


def run_branch(spec: BranchSpec, on_event: Callable[[Event], None] | None = None) -> BranchOutcome:
    """Run ``spec`` to completion (sync wrapper over :func:`run_branch_async`)."""
    from benchflow.jobs.api import run_to_end

    return run_to_end(run_branch_async(spec, on_event), "running children were cancelled and their sandboxes "
                      "removed; rerun the same command to finish the unfinished children")


async def run_branch_async(spec: BranchSpec, on_event: Callable[[Event], None] | None = None) -> BranchOutcome:
    emit = on_event or (lambda _e: None)
    from benchflow.jobs.api import resolve_ca_bundle

    plan = plan_branch(spec)
    ca_bundle = resolve_ca_bundle(spec.ca_bundle)  # a missing bundle is refused before the job folder is touched
    jobs_dir = Path(spec.jobs_dir).expanduser()
    job = JobPaths(jobs_dir / (spec.job_name or _pick_job(jobs_dir, spec)))
    fd = lock_job(job)
    try:
        return await _run(spec, plan, job, emit, ca_bundle)
    finally:
        import os

        os.close(fd)


def _pick_job(jobs_dir: Path, spec: BranchSpec) -> str:
    """The latest ``branch-*`` job of the same request that is unfinished, else a new name."""
    if jobs_dir.is_dir():
        for folder in sorted(jobs_dir.glob("branch-*"), key=lambda p: p.stat().st_mtime, reverse=True):
            record = read_json(folder / "evaluation.json") or {}
            if (record.get("run_config") or {}).get("branch") == spec.request() and \
                    not (folder / "summary.json").is_file():
                return folder.name
    name = "branch-" + dt.datetime.now().strftime("%Y-%m-%d__%H-%M-%S")
    n = 1
    while (jobs_dir / name).exists():
        n += 1
        name = f"branch-{dt.datetime.now().strftime('%Y-%m-%d__%H-%M-%S')}-{n}"
    return name


async def _run(spec: BranchSpec, plan: BranchPlan, job: JobPaths, emit: Callable[[Event], None],
               ca_bundle: Path | None) -> BranchOutcome:
    from benchflow.jobs.model_access import ModelAccess
    from benchflow.jobs.summary import build_summary
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.orphans import reap
    from benchflow.util import atomic

    started = time.monotonic()
    run_spec, backend = plan.run_spec, plan.backend
    job_label = str(job.root.resolve())
    previous = read_json(job.evaluation) or {}
    write_record(job.evaluation, EvaluationRecord(
        job_name=job.name, tasks_dir=plan.tasks_dir, identity={"agent": spec.agent, "model": spec.model},
        created_at=previous.get("created_at") or dt.datetime.now(dt.timezone.utc).isoformat(),
        run_config={**run_spec.redacted(), "branch": spec.request()}))
    if previous:  # a new job has no earlier run (evaluation.json is written before anything starts)
        await asyncio.to_thread(reap, backend, job_label)  # a killed earlier run's sandboxes ...
        stale = await asyncio.to_thread(backend.stale_snapshots, job_label)
        if stale:  # ... and its snapshots that nothing will use again
            await asyncio.to_thread(backend.remove_snapshots, stale)
    emit({"type": "job_started", "job_dir": str(job.root), "sandbox": plan.sandbox, "agent": spec.agent,
          "total": len(plan.tasks)})
    models = None if plan.agent.is_control else await ModelAccess.start(run_spec)
    results: dict[str, Any] = {}
    trials: list[Path] = []
    try:
        with sigterm_cancels_current_task():
            for planned in plan.tasks:
                paths = _trial_folder(job, planned.name)
                trials.append(paths.root)
                tree = TreeFile.load(paths)
                if tree is not None and paths.result.is_file() and _done(tree):
                    results[planned.name] = read_json(paths.result)
                    continue
                req = TrialRequest(task=planned.task, digest=planned.digest, prompts=planned.prompts, job=job,
                                   spec=run_spec, agent=plan.agent, backend=backend, backend_name=plan.sandbox,
                                   labels={"benchflow.job": job_label}, models=models, fit=planned.fit,
                                   task_secrets=planned.secrets, agent_env=dict(spec.agent_env), ca_bundle=ca_bundle,
                                   on_phase=lambda trial, phase: emit({"type": "phase", "trial": trial,
                                                                       "phase": phase}))
                results[planned.name] = await _one(spec, plan, planned, req, paths, tree)
                emit({"type": "trial_finished", "trial": paths.name, "result": results[planned.name]})
    finally:
        if models is not None:
            await asyncio.shield(models.stop())
    summary = build_summary(job_name=job.name, spec=run_spec, sandbox=plan.sandbox, results=results,
                            elapsed_sec=time.monotonic() - started, budget=None)
    atomic.write_json(job.summary, summary)
    unfinished = [p for p in trials if not _done(TreeFile.load(TrialPaths(p)))]
    code = 1 if unfinished else 0
    emit({"type": "job_finished", "job_dir": str(job.root), "exit_code": code, "summary": summary})
    return BranchOutcome(job_dir=job.root, exit_code=code, trials=trials)


def _trial_folder(job: JobPaths, task: str) -> TrialPaths:
    """The task's branched trial folder of this job (resumed), else a new one."""
    for trial in job.trials():
        if trial.name.rsplit("__", 1)[0] == task and trial.tree.is_file():
            return trial
    paths = job.trial(trial_name(task, uuid.uuid4().hex[:8]))
    paths.make_dirs()
    return paths


def _done(tree: TreeFile | None) -> bool:
    return tree is not None and all(tree.finished(n.id) for n in tree.tree.nodes)


async def _one(spec: BranchSpec, plan: BranchPlan, planned: PlannedTask, req: TrialRequest, paths: TrialPaths,
               tree: TreeFile | None) -> dict[str, Any]:
    """Run (or finish) one task's branched trial in ``paths``: the one trial runner with a :class:`.mode.BranchMode`."""
    from benchflow.jobs.prompts import resolve_prompts
    from benchflow.jobs.trial import run_trial

    from .env_state import declared_state
    from .mode import BranchMode

    start_from, prompts = None, planned.prompts
    if spec.from_checkpoint:
        start_from, prompts = start_snapshot(spec, prompts)
    if tree is None:  # a new trial (run_trial writes its config.json and prompts.json)
        tree = TreeFile(paths, new_tree(spec, trial=paths.name, task=planned.name, sandbox=plan.sandbox,
                                        prompts=prompts))
        tree.save()
    paths.result.unlink(missing_ok=True)  # unfinished until this run writes it again
    req = replace(req, name=paths.name, prompts=prompts, bridge_mounts=False)
    task_prompts = resolve_prompts(planned.task.instruction, [], prefix=planned.task.config.agent.prompt_prefix)
    declared = declared_state(planned.task.paths.task_dir) if spec.snapshot_layers != "sandbox" else None
    mode = BranchMode(spec=spec, req=req, paths=paths, tree=tree, task_prompts=task_prompts,
                      start_from=start_from, env_state=declared)
    return await run_trial(req, mode)
