"""The driver's side of ``--executor ray``: each attempt a Ray task, each finished folder installed here.

The scheduler (retries, budgets, concurrency) runs unchanged in the driver and hands every
attempt to :meth:`RayExecutor.run_attempt`, which submits :func:`.ray_node.run_attempt_on_node`
with the task's resources as Ray resources (``num_cpus``, ``memory``, ``num_gpus``) and awaits
it. The driver is the only writer of the job folder: a node returns the result document and the
packed trial folder, installed here in one rename. An attempt whose node or worker died is
recorded as an ``infra_failure`` (Ray does not retry it: ``--max-retries`` does, on whatever node
is free), and the sandboxes of dead owners on the driver's engine are removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.util import atomic

from .gateway_link import LinkAddress
from .ray_node import NodeWork, run_attempt_on_node
from .trial_bundle import install, pack

_MiB = 1024 * 1024


def resources(task: Any, fit: Any) -> dict[str, float]:
    """The Ray resources one attempt holds: what the sandbox is granted (``fit``), else what it asks."""
    sandbox = task.config.sandbox
    cpus = float(fit.cpus[1]) if fit is not None else float(sandbox.cpus)
    memory_mb = int(fit.memory_mb[1]) if fit is not None else int(sandbox.memory_mb)
    return {"num_cpus": cpus, "memory": float(memory_mb * _MiB), "num_gpus": float(sandbox.gpus or 0)}


@dataclass
class RayExecutor:
    ray: Any
    cluster: str
    link: LinkAddress | None = None
    remote: bool = True
    _task: Any = None
    _folders: dict[Path, Any] = field(default_factory=dict)
    _lost_on: dict[str, Any] = field(default_factory=dict)
    _reporters: dict[str, Any] = field(default_factory=dict)
    """Trial name -> its request's ``on_phase``, for the phases a node reports over the gateway link."""
    """Job label -> backend of attempts whose worker died: their sandboxes are reaped again at close."""

    def __post_init__(self) -> None:
        self._task = self.ray.remote(run_attempt_on_node)

    async def run_attempt(self, req: Any) -> dict[str, Any]:
        from benchflow.jobs.layout import trial_name

        name = trial_name(req.task.name, uuid.uuid4().hex[:8])
        started_at, t0 = dt.datetime.now(), time.monotonic()
        ca_bundle = await asyncio.to_thread(Path(req.ca_bundle).read_bytes) if req.ca_bundle else None
        work = NodeWork(trial=name, job_name=req.job.name, task=req.task, digest=req.digest, prompts=req.prompts,
                        spec=req.spec, agent=req.agent, backend_name=req.backend_name, attempt=req.attempt,
                        labels=dict(req.labels), seed=req.seed, fit=req.fit, cluster=self.cluster,
                        task_secrets=req.task_secrets, agent_env=dict(req.agent_env), ca_bundle=ca_bundle,
                        link=self.link, provenance=req.provenance)
        options = {**resources(req.task, req.fit), "max_retries": 0, "retry_exceptions": False,
                   "scheduling_strategy": "SPREAD", "name": f"benchflow:{name}"}
        try:  # an agent or task that cannot be pickled, an unreadable task folder: this attempt's error
            ref = self._task.options(**options).remote(work, await self._task_folder(req.task))
        except Exception as exc:  # noqa: BLE001 - recorded on the trial, never raised into the scheduler
            return await self._lost(req, name, started_at, time.monotonic() - t0, exc)
        req.on_phase(name, "start")  # later phases come over the gateway link, when the run has one
        self._reporters[name] = req.on_phase
        try:
            outcome = await ref
            await asyncio.to_thread(install, outcome.folder, req.job.trial(name).root)
        except asyncio.CancelledError:  # Ctrl-C, SIGTERM or a budget stop: the node removes its sandbox
            self.ray.cancel(ref)
            await _settle(ref)
            raise
        except Exception as exc:  # noqa: BLE001 - a lost node or worker, a node-side bug, a bad bundle
            return await self._lost(req, name, started_at, time.monotonic() - t0, exc)
        finally:
            self._reporters.pop(name, None)
        return outcome.result

    def phase(self, trial: str, phase: str) -> None:
        """A node reported that ``trial`` entered ``phase``."""
        report = self._reporters.get(trial)
        if report is not None:
            report(trial, phase)

    async def _task_folder(self, task: Any) -> Any:
        """The task's folder in the object store, put there once per job."""
        path = Path(task.path)
        if path not in self._folders:
            blob = await asyncio.to_thread(pack, path)
            self._folders[path] = self.ray.put(blob)
        return self._folders[path]

    async def _lost(self, req: Any, name: str, started_at: dt.datetime, elapsed: float, exc: Exception) -> dict[str, Any]:
        """Record an attempt that never came back (its node or worker died, or the node-side code
        failed) as an errored trial folder, and remove what its dead owner left on the driver's engine."""
        from benchflow.jobs.record import build_config, build_result
        from benchflow.jobs.trial_request import agent_timeout
        from benchflow.sandbox.orphans import reap

        error, category, lost = _failure(self.ray, exc)
        paths = req.job.trial(name)
        paths.make_dirs()
        config = build_config(spec=req.spec, task_path=str(req.task.path), task_name=req.task.name, digest=req.digest,
                              agent=req.agent.name, is_control=req.agent.is_control, environment=req.backend_name,
                              started_at=started_at, prompts=req.prompts, timeout_sec=agent_timeout(req),
                              attempt=req.attempt, seed=req.seed,
                              sandbox_fit=req.fit.record() if req.fit is not None else None,
                              provenance=req.provenance)
        atomic.write_json(paths.config, {**config, "executor": {"kind": "ray", "cluster": self.cluster, "node_id": None,
                                                                **({"lost": True} if lost else {})}})
        result = build_result(task_name=req.task.name, trial_name=name, agent=req.agent.name, model=req.spec.model,
                              environment=req.backend_name, task_digest=req.digest, attempt=req.attempt,
                              seed=req.seed, started_at=started_at, timing={"total": elapsed}, events=[],
                              outcome=None, verifier=None, error=error, error_category=category)
        atomic.write_json(paths.result, result)
        if req.labels.get("benchflow.job"):
            self._lost_on[req.labels["benchflow.job"]] = req.backend
            await asyncio.to_thread(reap, req.backend, req.labels["benchflow.job"])
        return result

    async def close(self) -> None:
        """Reap once more what lost attempts left on the driver's engine: a dead node's worker can
        outlive the loss by a while, and its sandbox is an orphan only once it is gone."""
        from benchflow.sandbox.orphans import reap

        for label, backend in self._lost_on.items():
            await asyncio.to_thread(reap, backend, label)


def _failure(ray: Any, exc: Exception) -> tuple[str, str, bool]:
    """(error, category, lost) of an attempt that did not come back with a result."""
    from benchflow.jobs.trial import unexpected_category

    if isinstance(exc, ray.exceptions.RayTaskError):  # the node-side code raised
        cause = exc.cause if isinstance(exc.cause, BaseException) else exc
        return f"{type(cause).__name__}: {cause}", unexpected_category(cause), False
    if isinstance(exc, ray.exceptions.RayError):  # the worker or its node died, or the object was lost
        first = (str(exc).strip().splitlines() or [""])[0]
        return f"ray: {type(exc).__name__}: {first}", "infra_failure", True
    return f"{type(exc).__name__}: {exc}", unexpected_category(exc), False


async def _settle(ref: Any, timeout_sec: float = 60.0) -> None:
    """Wait (bounded) for a cancelled attempt to end on its node, so its sandbox is gone before the
    driver disconnects (a driver that leaves first has Ray kill the worker mid-cleanup)."""
    done = asyncio.wrap_future(ref.future())
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(done), timeout_sec)
