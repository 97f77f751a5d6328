"""``run`` / ``run_async``: the one library call behind ``bench run`` and ``bf.run``.

Plan → open (or resume) the job folder → schedule the trials → write the
summary → pick the exit code. The library never draws on the terminal: it
reports through ``on_event`` and returns a ``RunOutcome``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError, Interrupted, UserError
from benchflow.util import atomic
from benchflow.util.signals import sigterm_cancels_current_task

from .budget import BudgetKeeper
from .extensions import hooks
from .job import JobFolder, open_job, write_evaluation
from .layout import JobPaths
from .plan import Plan, PlannedTask, make_plan
from .record import comparable_settings
from .scheduler import Scheduler
from .spec import RunSpec
from .trial import TrialRequest

Event = dict[str, Any]


class RunRefused(BenchError):
    """The run card refused the run; nothing started."""

    category = "run_refused"
    exit_code = 1


class TaskEnvRefused(UserError):
    """A task reads a host variable the run did not allow (``--allow-task-env``); nothing started."""

    category = "run_refused"


@dataclass
class RunOutcome:
    job_dir: Path
    summary: dict[str, Any]
    exit_code: int
    plan: Plan | None
    """None for a run with no plan of task folders (a hosted environment's)."""
    gate: dict[str, Any] = field(default_factory=dict)

    @property
    def outcomes_line(self) -> str:
        from .summary import outcomes_line

        return outcomes_line(self.summary)


def run(spec: RunSpec, on_event: Callable[[Event], None] | None = None) -> RunOutcome:
    """Run ``spec`` to completion (sync wrapper over :func:`run_async`)."""
    return run_to_end(run_async(spec, on_event), "running trials were cancelled and their sandboxes removed; "
                      "rerun the same command to resume")


def run_to_end(work: Any, what_now: str) -> Any:
    """``asyncio.run(work)``; Ctrl-C or SIGTERM becomes :class:`Interrupted` (exit 130) saying ``what_now``."""
    try:
        return asyncio.run(work)
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise Interrupted(f"interrupted: {what_now}") from None


def resolve_ca_bundle(value: str | None) -> Path | None:
    if not value:
        return None
    if value == "host":
        value = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
    path = Path(value).expanduser()
    if not path.is_file():
        from benchflow.errors import ConfigError

        raise ConfigError(f"--ca-bundle {value}: no such file; give a PEM bundle or 'host'")
    return path


async def run_async(spec: RunSpec, on_event: Callable[[Event], None] | None = None,
                    plan: Plan | None = None, gateway: Any = None) -> RunOutcome:
    """``gateway``: a running gateway to serve this run's agents from (the warm daemon's), else
    the run starts its own when its agent calls models."""
    emit = on_event or (lambda _e: None)
    whole = next(hooks(spec, "run_job"), None)
    if whole is not None:  # a hosted environment: verifiers runs its rollouts, no task folder or sandbox
        return await whole(spec, emit)
    plan = plan or make_plan(spec)
    if plan.card.env_refusals:
        more = len(plan.card.env_refusals) - 1
        raise TaskEnvRefused(plan.card.env_refusals[0] + (f" (and {more} more)" if more else ""))
    if not plan.card.accepted:
        raise RunRefused("the run card refuses this run: " + "; ".join(plan.card.refusals[:5]))
    from benchflow import agents

    agent = agents.resolve(spec.agent, harness=spec.harness)
    backend = plan.backend
    backend.set_build_concurrency(spec.build_concurrency or spec.concurrency)
    ca_bundle = resolve_ca_bundle(spec.ca_bundle)
    for preflight in hooks(spec, "preflight"):  # e.g. --executor ray: Ray installed, options it can honour
        preflight(spec)  # before the job folder is touched
    if spec.canonical_jobs_dir:  # refused now, not once the trials have run
        from .canonical import check_jobs_dir

        check_jobs_dir(Path(spec.canonical_jobs_dir))
    expected = {t.key: _expected(spec, agent.name, t) for t in plan.units}
    job, why = open_job(Path(spec.jobs_dir).expanduser(), job_name=spec.job_name, fresh=spec.fresh,
                        identity={"agent": agent.name, "model": spec.model}, expected=expected,
                        restart_changed=spec.restart_changed)
    try:
        return await _run_job(spec, plan, job, why, agent, backend, ca_bundle, emit, gateway)
    finally:
        job.release()


def _finished_result(trial: Any) -> dict[str, Any] | None:
    """A reused trial's result.json through its model (0.7 and older records upgraded); None when unreadable."""
    from benchflow.records import TrialResult, read_optional

    record = read_optional(TrialResult, trial.result, [], name=trial.name)
    return record.to_json() if record is not None else None


def _expected(spec: RunSpec, agent_name: str, planned: PlannedTask) -> dict[str, Any]:
    expected = comparable_settings(spec, agent_name, planned.digest, planned.prompts)
    for comparable in hooks(spec, "comparable"):  # a feature's settings (the skill mode, the scenes as played)
        expected.update(comparable(spec, planned.task, agent_name))
    return expected


async def _run_job(spec: RunSpec, plan: Plan, job: JobFolder, why: str, agent: Any, backend: Any,
                   ca_bundle: Path | None, emit: Callable[[Event], None], gateway: Any = None) -> RunOutcome:
    started = time.monotonic()
    paths = job.paths
    write_evaluation(job, spec.redacted(), {"agent": agent.name, "model": spec.model}, plan.tasks_dir)
    atomic.write_json(paths.run_card, plan.card.document(plan))
    job_label = str(paths.root.resolve())
    from benchflow.sandbox.orphans import reap

    await asyncio.to_thread(reap, backend, job_label)  # what a killed earlier run of this job left
    units = plan.units
    todo = [t for t in units if t.key not in job.finished]
    emit({"type": "job_started", "job_dir": str(paths.root), "why": why, "sandbox": plan.sandbox,
          "sandbox_reason": plan.sandbox_reason, "agent": agent.name, "total": len(units),
          "reused": len(units) - len(todo), "todo": [t.key for t in todo], "notes": plan.card.notes})
    elsewhere = next(hooks(spec, "run_trials"), None)
    if elsewhere is not None:  # worker subprocesses run the trials; this process only watches them
        fresh, budget_document = await elsewhere(spec, plan, paths, todo, emit)
    else:
        fresh, budget = await run_units(spec, plan, paths, todo, agent, ca_bundle, emit, gateway)
        budget_document = budget.document()
    results = {t.key: _finished_result(job.finished[t.key]) for t in units if t.key in job.finished}
    results.update(fresh)
    for after_trials in hooks(spec, "after_trials"):  # audit and rubric review; rewards never change
        await after_trials(spec, paths, fresh, {t.key: t.task for t in units}, emit)
    from .summary import build_summary  # imported ahead while the first sandbox started

    summary = build_summary(job_name=paths.name, spec=spec, sandbox=plan.sandbox,
                            results={t.key: results.get(t.key) for t in units},
                            elapsed_sec=time.monotonic() - started, budget=budget_document,
                            provenance=plan.provenance)
    atomic.write_json(paths.summary, summary)
    atomic.write_json(paths.summary_copy, summary)
    code, gate = exit_code(spec, summary, results)
    if spec.health_summary_out or spec.canonicalize != "none":
        from .canonical import write_outputs

        problem = write_outputs(spec, paths.root, emit)
        if problem:
            code, gate = 1, {**gate, "passed": False, "reasons": [*gate["reasons"], problem]}
    outcome = RunOutcome(job_dir=paths.root, summary=summary, exit_code=code, plan=plan, gate=gate)
    write_side_files(spec, plan, outcome)
    emit({"type": "job_finished", "job_dir": str(paths.root), "summary": summary, "exit_code": code})
    return outcome


async def run_units(spec: RunSpec, plan: Plan, paths: JobPaths, todo: list[PlannedTask], agent: Any,
                    ca_bundle: Path | None, emit: Callable[[Event], None],
                    gateway: Any = None, retry_slots: str | None = None,
                    ledger: Any = None) -> tuple[dict[str, Any], BudgetKeeper]:
    """Schedule ``todo`` in this process (gateway for a model-calling agent, budgets, retries);
    task key -> final result (None: never finished), and the budget keeper. A worker shard runs this too.
    ``gateway``: as :func:`run_async`; ``retry_slots``: the file slots (``util.file_slots``) that cap
    retries across processes (worker shards), else a cap of this process's own; ``ledger``: the job
    budget's spend shared with other processes (:class:`BudgetKeeper`'s ``ledger``)."""
    backend = plan.backend
    models = None
    if not agent.is_control:  # the model gateway and its bridges: only a model-calling agent needs them
        from .model_access import ModelAccess

        models = await ModelAccess.start(spec, shared=gateway)
    budget = BudgetKeeper(spec.budget, spend_source=models.spent if models else None, ledger=ledger)
    labels = {"benchflow.job": str(paths.root.resolve())}

    def make_request(planned: PlannedTask, attempt: int) -> TrialRequest:
        return TrialRequest(task=planned.task, digest=planned.digest, prompts=planned.prompts, job=paths, spec=spec,
                            agent=agent,
                            backend=backend, backend_name=plan.sandbox, attempt=attempt, labels=labels,
                            seed=planned.seed, models=models, fit=planned.fit, task_secrets=planned.secrets,
                            provenance=plan.provenance, ca_bundle=ca_bundle, agent_env=dict(spec.agent_env),
                            on_phase=lambda trial, phase: emit({"type": "phase", "trial": trial, "phase": phase}))

    remote = next((open_executor(spec, models, todo) for open_executor in hooks(spec, "executor")), None)
    try:
        async with remote or contextlib.nullcontext() as executor:  # a Ray cluster, or this process
            scheduler = Scheduler(make_request=make_request, concurrency=spec.concurrency,
                                  warm_pool=spec.effective_warm_pool,
                                  retry_attempts=spec.retry.attempts, retry_policy=spec.retry.policy,
                                  budget=budget, emit=emit, retry_slot=_retry_slot(spec, retry_slots),
                                  run_attempt=executor.run_attempt if executor is not None else None)
            with sigterm_cancels_current_task():
                fresh = await scheduler.run(todo)
    finally:
        if ledger is not None:
            budget.sync()  # the last spend, cancellations and tasks left unstarted, for the job's summary
        if models is not None:
            await asyncio.shield(models.stop())
    return fresh, budget


def _retry_slot(spec: RunSpec, folder: str | None) -> Callable[[], Any] | None:
    """What a retry attempt holds under ``--retry-concurrency``: a slot of ``folder`` (the file slots worker
    shards share), else one of this process's semaphore; None without a cap."""
    if spec.retry.concurrency is None:
        return None
    if folder is not None:
        from benchflow.util.file_slots import held_slot

        return lambda: held_slot(folder)
    slots = asyncio.Semaphore(spec.retry.concurrency)
    return lambda: slots


def exit_code(spec: RunSpec, summary: dict[str, Any],
              results: dict[str, dict[str, Any] | None]) -> tuple[int, dict[str, Any]]:
    """0 when the pipeline completed; 1 for errored trials or a failed gate."""
    reasons = []
    if summary["errored"] or summary["verifier_errored"]:
        reasons.append(f"{summary['errored'] + summary['verifier_errored']} trial(s) errored")
    gates = spec.gates
    if gates.fail_under is not None:
        rate = summary["passed"] / summary["total"] if summary["total"] else 0.0
        if rate < gates.fail_under:
            reasons.append(f"pass rate {rate:.1%} is below --fail-under {gates.fail_under:g}")
    hits = {"timeout": summary["timed_out"], "error": summary["errored"],
            "verifier-error": summary["verifier_errored"]}
    for name in gates.fail_on:
        if hits[name]:
            reasons.append(f"--fail-on {name}: {hits[name]} trial(s)")
    gate = {"fail_under": gates.fail_under, "fail_on": list(gates.fail_on), "passed": not reasons,
            "reasons": reasons}
    return (1 if reasons else 0), gate


def write_side_files(spec: RunSpec, plan: Plan | None, outcome: RunOutcome) -> None:
    """--summary-out, --task-manifest-out (a plan's only) and --run-config-out, once the run is over."""
    if spec.summary_out:
        s = outcome.summary
        atomic.write_json(spec.summary_out, {
            "schema_version": 1, "kind": "benchflow.run-summary", "job_dir": str(outcome.job_dir),
            "counts": {k: s[k] for k in ("total", "passed", "failed", "errored", "verifier_errored", "unscored")},
            "score": s["score_ratio"], "mean_reward": s["mean_reward"], "budget": s["budget"],
            "gate": outcome.gate, "exit_code": outcome.exit_code})
    if spec.task_manifest_out and plan is not None:
        atomic.write_json(spec.task_manifest_out, plan.manifest())
    if spec.run_config_out:
        atomic.write_json(spec.run_config_out, spec.redacted())

