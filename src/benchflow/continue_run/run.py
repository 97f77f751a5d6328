"""``continue_trials``: the one library call behind ``bench eval continue`` and ``continue-batch``.

Each planned continuation (:mod:`.plan`) runs as one trial of its output job
(``<original job>/continued/<original job name>/<task>__<hex8>/``, the usual trial layout): the
job's model gateway registers the trial's route with a :class:`~benchflow.gateway.replay.Replay`
of the original's recording, and the one trial runner runs it in a :class:`.mode.ContinueMode`.
Its ``config.json`` names the original (``continued_from``), its ``result.json`` has the
``continued`` block, its ``llm_trajectory.jsonl`` holds the replayed calls (``metadata.replayed``)
and then the live ones. The original trial folder is only read. Each output job gets a
``summary.json`` over all its continued trials. Ctrl-C / SIGTERM removes the running sandboxes
and leaves their trials unfinished (no ``result.json``), exit 130.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import JobPaths, trial_name
from benchflow.util.signals import sigterm_cancels_current_task

from .plan import Continuation, ContinueOptions

Event = dict[str, Any]


@dataclass
class Continued:
    """How one continuation ended: its trial folder and result, or why it could not run."""

    source: Path
    trial: Path | None = None
    result: dict[str, Any] | None = None
    refused: str | None = None

    @property
    def ok(self) -> bool:
        """Scored, and neither the agent nor the verifier failed (a replay-only stop is no failure)."""
        result = self.result or {}
        return (self.refused is None and (result.get("rewards") or {}).get("reward") is not None
                and not result.get("error") and not result.get("verifier_error"))


@dataclass
class ContinueOutcome:
    continued: list[Continued] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when every continuation was scored without an error, else 1."""
        return 0 if all(c.ok for c in self.continued) else 1


def continue_trials(continuations: list[Continuation], options: ContinueOptions, *, concurrency: int = 1,
                    on_event: Callable[[Event], None] | None = None) -> ContinueOutcome:
    """Run every continuation (sync wrapper over :func:`continue_trials_async`)."""
    from benchflow.jobs.api import run_to_end

    return run_to_end(continue_trials_async(continuations, options, concurrency=concurrency, on_event=on_event),
                      "running continuations were cancelled and their sandboxes removed; run the command again")


async def continue_trials_async(continuations: list[Continuation], options: ContinueOptions, *,
                                concurrency: int = 1,
                                on_event: Callable[[Event], None] | None = None) -> ContinueOutcome:
    """Run ``continuations``, at most ``concurrency`` at once, each in its output job (locked while it runs)."""
    from benchflow.jobs.job import lock_job
    from benchflow.sandbox.orphans import reap

    emit = on_event or (lambda _e: None)
    jobs = {c.job.root: c for c in continuations}
    locks: list[int] = []
    started = time.monotonic()
    try:
        for root, first in jobs.items():
            locks.append(lock_job(first.job))
            _write_evaluation(first)
            await asyncio.to_thread(reap, first.plan.backend, str(root))  # what a killed earlier run left
        slots = asyncio.Semaphore(concurrency)

        async def one(continuation: Continuation) -> Continued:
            async with slots:
                return await _continue_one(continuation, options, emit)

        with sigterm_cancels_current_task():
            done = await asyncio.gather(*(one(c) for c in continuations))
        for first in jobs.values():
            _write_summary(first, time.monotonic() - started)
        return ContinueOutcome(list(done))
    finally:
        for fd in locks:
            os.close(fd)


async def _continue_one(c: Continuation, options: ContinueOptions, emit: Callable[[Event], None]) -> Continued:
    from benchflow.gateway.replay import Replay
    from benchflow.jobs.model_access import ModelAccess
    from benchflow.jobs.trial import run_trial
    from benchflow.jobs.trial_request import TrialRequest

    from .mode import ContinueMode

    name = trial_name(c.planned.name, uuid.uuid4().hex[:8])
    paths = c.job.trial(name)
    replay = Replay(c.source.calls, live=not options.replay_only, strict=options.strict_divergence)
    emit({"type": "continuing", "source": str(c.source.paths.root), "trial": str(paths.root),
          "recorded_calls": len(c.source.calls), "notes": c.notes})
    models = await ModelAccess.start(c.run_spec)
    try:
        models.expect_replay(name, replay, c.upstreams)
        req = TrialRequest(task=c.planned.task, digest=c.planned.digest, prompts=c.prompts, job=c.job,
                           spec=c.run_spec, agent=c.agent, backend=c.plan.backend, backend_name=c.plan.sandbox,
                           labels={"benchflow.job": str(c.job.root)}, models=models, fit=c.planned.fit,
                           task_secrets=c.planned.secrets, agent_env=dict(c.run_spec.agent_env), name=name,
                           provenance={**(c.plan.provenance or {}), "continued_from": str(c.source.paths.root)},
                           on_phase=lambda trial, phase: emit({"type": "phase", "trial": trial, "phase": phase}))
        mode = ContinueMode(req, paths, c.prompts, replay=replay, source=c.source, live_model=c.live_model,
                            strict=options.strict_divergence)
        result = await run_trial(req, mode)
    finally:
        await asyncio.shield(models.stop())
    continued = Continued(source=c.source.paths.root, trial=paths.root, result=result)
    emit({"type": "continued", "source": str(c.source.paths.root), "trial": str(paths.root), "result": result})
    return continued


def _write_evaluation(c: Continuation) -> None:
    """The output job's ``evaluation.json``: the continuation's settings (secrets dropped) and the job it
    continues. Its ``continue`` key is no run option, so ``bench eval resume`` refuses the job: a
    continuation is run again with ``bench eval continue``."""
    import datetime as dt

    from benchflow.records import EvaluationRecord, read_optional, write_record

    previous = read_optional(EvaluationRecord, c.job.evaluation, [])
    write_record(c.job.evaluation, EvaluationRecord(
        job_name=c.job.name, tasks_dir=None, identity={"agent": c.agent.name, "model": c.run_spec.model},
        created_at=(previous.created_at if previous else None) or dt.datetime.now(dt.timezone.utc).isoformat(),
        run_config={**c.run_spec.redacted(), "continue": {"from_job": str(c.source.paths.root.parent)}}))


def _write_summary(c: Continuation, elapsed_sec: float) -> None:
    """The output job's ``summary.json`` over every continued trial it holds (earlier runs' too)."""
    from benchflow.jobs.summary import build_summary
    from benchflow.records import TrialResult, read_optional
    from benchflow.util import atomic

    job: JobPaths = c.job
    results = {trial.name: read_optional(TrialResult, trial.result, [], name=trial.name) for trial in job.trials()}
    summary = build_summary(job_name=job.name, spec=c.run_spec, sandbox=c.plan.sandbox,
                            results={k: v for k, v in results.items() if v is not None},
                            elapsed_sec=elapsed_sec, budget=None, provenance=c.plan.provenance)
    atomic.write_json(job.summary, summary)
