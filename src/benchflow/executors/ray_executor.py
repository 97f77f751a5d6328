"""The driver's side of ``--executor ray``: each attempt placed by Ray, run by its node's agent.

The scheduler (retries, budgets, concurrency) runs unchanged in the driver and hands every
attempt to :meth:`RayExecutor.run_attempt`. The attempt's resources (the task's CPUs, memory and
GPUs) are reserved as a one-bundle Ray placement group, so Ray decides where it runs and counts
what it holds, as for a Ray task; the attempt then runs on that node's :class:`.ray_node.NodeAgent`
(one actor per node and run, started for every live node when the run opens). Once the trial's
agent and verifier are done (the agent answers ``run_phases_done`` before it removes the sandbox
and writes the record, as a run slot ends in-process) the placement group goes back to an idle pool, where the
next attempt of the same shape takes it at once instead of asking Ray for a new one; idle groups
of another shape are removed when a new one is needed, and all at the end. The attempt that finds
no free run slot (the ``--warm-pool`` one) is prepared ahead on the node of a running attempt whose
verifier has started and takes that attempt's slot and group over (:mod:`.ray_handover`). One agent process per
node instead of one Ray worker process per concurrent attempt: BenchFlow is imported and the
engine connection opened once per node (``benchmarks/scale_out.py``). The driver is the only
writer of the job folder: a node returns the result document and the packed trial folder,
installed here in one rename. An attempt whose node or agent died is recorded as an
``infra_failure`` (Ray does not retry it: ``--max-retries`` does, on whatever node is free), and
the sandboxes of dead owners on the driver's engine are removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchflow.util import atomic

from .gateway_link import LinkAddress
from .ray_handover import Handovers, Running, Shape
from .ray_node import NodeAgent, NodeWork
from .trial_bundle import install, pack

_MiB = 1024 * 1024


def bundle(need: dict[str, float]) -> dict[str, float]:
    """:func:`resources` as a placement-group bundle (Ray's resource names; none of zero)."""
    named = {"CPU": need["num_cpus"], "memory": need["memory"], "GPU": need["num_gpus"]}
    return {key: value for key, value in named.items() if value > 0}


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
    _agent_class: Any = None
    _agents: dict[str, Any] = field(default_factory=dict)
    """Node id -> the run's agent on that node."""
    _idle: dict[Shape, list[Any]] = field(default_factory=dict)
    """Bundle shape -> placement groups whose attempt has finished its run phases."""
    _waiting: dict[Shape, list[asyncio.Future]] = field(default_factory=dict)
    """Bundle shape -> attempts waiting for Ray to place a new group (a finished one is handed over)."""
    _folders: dict[Path, Any] = field(default_factory=dict)
    _lost_on: dict[str, Any] = field(default_factory=dict)
    """Job label -> backend of attempts whose worker died: their sandboxes are reaped again at close."""
    _reporters: dict[str, Any] = field(default_factory=dict)
    """Trial name -> its request's ``on_phase``, for the phases a node reports over the gateway link."""
    _handovers: Handovers = field(default_factory=Handovers)

    def __post_init__(self) -> None:
        self._agent_class = self.ray.remote(NodeAgent)
        for node in self.ray.nodes():  # started now: their start overlaps the driver's planning
            if node.get("Alive"):
                self._agent(node["NodeID"])

    def _agent(self, node_id: str) -> Any:
        """The run's agent on ``node_id``, started on first use (a node that joined mid-run)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if node_id not in self._agents:
            self._agents[node_id] = self._agent_class.options(
                num_cpus=0, max_restarts=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote()
        return self._agents[node_id]

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
        shape = tuple(sorted(bundle(resources(req.task, req.fit)).items()))
        ref = node = outcome = watch = donor = None
        slot = None  # the run slot, held from placement to the end of the run phases
        me: Running | None = None  # what this attempt holds (its placement group), once it holds it
        try:  # an agent or task that cannot be pickled, an unreadable task folder: this attempt's error
            folder = await self._task_folder(req.task)
            donor = await self._handovers.run_slot(req.run_slot, shape)
            if donor is None:
                slot = req.run_slot
                placement, node = await self._placement(shape, name)
                me = Running(node, shape, placement)
            else:  # held on the donor's node: its sandbox is made while the donor's verifier runs
                node, work = donor.node, replace(work, held=True)
            agent = self._agent(node)
            ref = agent.run_attempt.options(name=f"benchflow:{name}").remote(work, folder)
            ran, verifying = agent.run_phases_done.remote(name), agent.verifier_started.remote(name)
            req.on_phase(name, "start")  # later phases come over the gateway link, when the run has one
            self._reporters[name] = req.on_phase
            outcome = asyncio.ensure_future(_get(ref))
            if donor is not None and await self._handovers.take_over(
                    donor, outcome, lambda: self._give_back(donor.placement, req.run_slot)):
                slot, me = req.run_slot, Running(node, shape, donor.placement)
                agent.go.remote(name)
            if me is not None:
                watch = asyncio.ensure_future(self._handovers.offer_when_verifying(verifying, me))
            if await _first_of(_get(ran), outcome) and me is not None:  # the sandbox is being removed: the resources may go on
                self._hand_over(me, slot)
                me = slot = None
            outcome = await outcome
            await asyncio.to_thread(install, outcome.folder, req.job.trial(name).root)
        except asyncio.CancelledError:  # Ctrl-C, SIGTERM or a budget stop: the node removes its sandbox
            if isinstance(outcome, asyncio.Future):
                outcome.cancel()
            if ref is not None:
                self.ray.cancel(ref)
                await _settle(ref)
            raise
        except Exception as exc:  # noqa: BLE001 - a lost node or agent, a node-side bug, a bad bundle
            if isinstance(exc, self.ray.exceptions.RayActorError) and node is not None:
                self._agents.pop(node, None)  # a new one if the node still lives
            return await self._lost(req, name, started_at, time.monotonic() - t0, exc)
        finally:
            self._reporters.pop(name, None)
            if watch is not None:
                watch.cancel()
            self._handovers.never_took_over(donor)
            if me is not None:  # to a held attempt (on the same node: it will see what became of it), else removed
                self._hand_over(me, slot, remove=True)
            elif slot is not None:
                slot.release()
        return outcome.result

    def _hand_over(self, me: Running, slot: Any, remove: bool = False) -> None:
        """``me``'s run phases are over: its run slot and placement group go to its held successor;
        else the group is removed (``remove``) or goes to :meth:`_release`, and the slot is released."""
        if self._handovers.end(me):
            return
        if remove:
            self._give_back(me.placement, slot)
            return
        self._release(me.shape, me.placement)
        if slot is not None:
            slot.release()

    def _give_back(self, placement: Any, slot: asyncio.Semaphore | None) -> None:
        self.ray.util.remove_placement_group(placement)
        if slot is not None:
            slot.release()

    async def _placement(self, shape: Shape, name: str) -> tuple[Any, str]:
        """(placement group, its node): an idle one of ``shape`` still in place, else a new one once
        Ray has placed it or one of ``shape`` is handed over, whichever comes first (idle ones of
        other shapes are removed first: they hold resources it may need)."""
        while self._idle.get(shape):
            placement = self._idle[shape].pop()
            node = await self._node_of(placement)
            if node is not None:
                return placement, node
        for other in [key for key in self._idle if key != shape]:
            for placement in self._idle.pop(other):
                self.ray.util.remove_placement_group(placement)
        placement = self.ray.util.placement_group([dict(shape)], name=f"benchflow:{name}")
        handed: asyncio.Future = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(shape, []).append(handed)
        ready = asyncio.ensure_future(_get(placement.ready()))
        try:
            await asyncio.wait({ready, handed}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            ready.cancel()
            self.ray.util.remove_placement_group(placement)
            if handed.done() and not handed.cancelled():
                self.ray.util.remove_placement_group(handed.result())
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiting[shape].remove(handed)
        if handed.done():  # a finished attempt's group came first: Ray need not place this one
            ready.cancel()
            self.ray.util.remove_placement_group(placement)
            placement = handed.result()
        else:
            handed.cancel()
            await ready
        node = await self._node_of(placement)
        if node is None:
            return await self._placement(shape, name)
        return placement, node

    async def _node_of(self, placement: Any) -> str | None:
        """The node a placement group holds its bundle on; None (and the group removed) when Ray is
        placing it again (its node was lost)."""
        entry = await asyncio.to_thread(self.ray.util.placement_group_table, placement)
        if entry.get("state") == "CREATED":
            return entry["bundles_to_node_id"][0]
        self.ray.util.remove_placement_group(placement)
        return None

    def _release(self, shape: Shape, placement: Any) -> None:
        """An attempt's run phases are over: its group goes to an attempt waiting for one of its
        shape, else is removed if an attempt waits for another shape, else waits idle."""
        for waiting in self._waiting.get(shape, []):
            if not waiting.done():
                waiting.set_result(placement)
                return
        if any(not w.done() for ws in self._waiting.values() for w in ws):
            self.ray.util.remove_placement_group(placement)
        else:
            self._idle.setdefault(shape, []).append(placement)

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
        from benchflow.jobs.record import build_config
        from benchflow.jobs.result_record import build_result
        from benchflow.jobs.trial_request import agent_timeout
        from benchflow.sandbox.orphans import reap

        error, category, lost = _failure(self.ray, exc)
        paths = req.job.trial(name)
        paths.make_dirs()
        config = build_config(spec=req.spec, task_path=str(req.task.path), task_name=req.task.name, digest=req.digest,
                              agent=req.agent.name, agent_version=req.agent.version,
                              is_control=req.agent.is_control, environment=req.backend_name,
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
        """End the agents (every attempt has ended), then reap once more what lost attempts left on
        the driver's engine: a dead node's agent can outlive the loss by a while, and its sandbox is
        an orphan only once it is gone."""
        from benchflow.sandbox.orphans import reap

        for agent in self._agents.values():
            with contextlib.suppress(Exception):
                self.ray.kill(agent, no_restart=True)
        self._agents.clear()
        for placements in self._idle.values():
            for placement in placements:
                with contextlib.suppress(Exception):
                    self.ray.util.remove_placement_group(placement)
        self._idle.clear()
        for label, backend in self._lost_on.items():
            await asyncio.to_thread(reap, backend, label)


def _failure(ray: Any, exc: Exception) -> tuple[str, str, bool]:
    """(error, category, lost) of an attempt that did not come back with a result."""
    from benchflow.jobs.trial import unexpected_category

    if isinstance(exc, ray.exceptions.RayTaskError):  # the node-side code raised
        cause = exc.cause if isinstance(exc.cause, BaseException) else exc
        return f"{type(cause).__name__}: {cause}", unexpected_category(cause), False
    if isinstance(exc, ray.exceptions.RayError):  # the agent or its node died, or the object was lost
        first = (str(exc).strip().splitlines() or [""])[0]
        return f"ray: {type(exc).__name__}: {first}", "infra_failure", True
    return f"{type(exc).__name__}: {exc}", unexpected_category(exc), False


async def _get(ref: Any) -> Any:
    return await ref


async def _first_of(ran: Any, outcome: asyncio.Future) -> bool:
    """Wait for the attempt's run phases to end or the attempt itself; True when the run phases
    ended first (a failed answer counts as not: the outcome then says what happened)."""
    signal = asyncio.ensure_future(ran)
    try:
        await asyncio.wait({signal, outcome}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not signal.done():
            signal.cancel()
    return signal.done() and not signal.cancelled() and signal.exception() is None and not outcome.done()


async def _settle(ref: Any, timeout_sec: float = 60.0) -> None:
    """Wait (bounded) for a cancelled attempt to end on its node, so its sandbox is gone before the
    driver disconnects (a driver that leaves first has Ray kill the agent mid-cleanup)."""
    done = asyncio.wrap_future(ref.future())
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(done), timeout_sec)
