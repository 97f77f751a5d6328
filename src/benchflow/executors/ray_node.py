"""What a cluster node does for the job: one agent process runs that node's attempts side by side.

:class:`NodeAgent` is the body of a Ray actor, one per node and run (created by
:mod:`.ray_executor`, imported by reference on the node, so every node needs the same BenchFlow
installed). It runs each attempt as a coroutine on its one event loop, and answers
:meth:`NodeAgent.run_phases_done` once the trial's agent and verifier are done (the driver then
lets the next attempt have the resources while this one's sandbox is removed and its record
written, as a run slot ends in-process), and :meth:`NodeAgent.verifier_started` once its verifier
starts: the driver then sends the attempt that will take its resources here *held*
(``NodeWork.held``), to build and start its sandbox while the verifier runs and start its agent on
:meth:`NodeAgent.go`, as a warm sandbox takes a freed run slot in-process. BenchFlow is imported
and the engine connection opened once per node, not once per concurrent slot (a Ray task per
attempt needed a worker process per slot, each importing Ray and BenchFlow: most of the
executor's overhead on a small cluster). The node never writes the job folder: it runs the
ordinary :func:`benchflow.jobs.trial.run_trial` against its own sandbox backend (its local
Docker engine, or ``local``) in a private scratch folder, notes in ``config.json`` which node
ran it, and returns the result document plus the packed trial folder for the driver to install.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.util import atomic

from .gateway_link import LinkAddress, RemoteModelAccess
from .trial_bundle import pack, unpack


@dataclass
class NodeWork:
    """Everything one attempt needs, as plain picklable values (no engine object crosses)."""

    trial: str
    job_name: str
    task: Any
    """The planned ``benchflow.tasks.Task``; its folder travels separately, packed."""
    digest: str
    prompts: list[str]
    spec: Any
    agent: Any
    backend_name: str
    attempt: int
    labels: dict[str, str]
    seed: int | None
    fit: Any
    cluster: str
    task_secrets: tuple[str, ...] = ()
    agent_env: dict[str, str] = field(default_factory=dict, repr=False)
    ca_bundle: bytes | None = None
    link: LinkAddress | None = None
    provenance: dict[str, Any] | None = None
    held: bool = False
    """Prepared ahead: the sandbox is made at once, the agent waits for :meth:`NodeAgent.go`."""


@dataclass
class NodeOutcome:
    trial: str
    result: dict[str, Any]
    folder: bytes
    """The trial folder, packed (:func:`benchflow.executors.trial_bundle.pack`)."""
    node: dict[str, Any]


def scratch_root() -> Path:
    """Where a node keeps its trials while they run: ``$BENCHFLOW_RAY_SCRATCH`` or the temp dir."""
    return Path(os.environ.get("BENCHFLOW_RAY_SCRATCH") or tempfile.gettempdir()) / "benchflow-ray"


def node_identity(cluster: str) -> dict[str, Any]:
    import ray

    return {"kind": "ray", "cluster": cluster, "node_id": ray.get_runtime_context().get_node_id(),
            "node_ip": ray.util.get_node_ip_address(), "hostname": socket.gethostname()}


def rebase(task: Any, root: Path) -> Any:
    """``task`` with every path under its folder moved under ``root`` (its copy on this node)."""
    old = Path(task.path)

    def moved(value: Any) -> Any:
        if isinstance(value, Path) and value.is_relative_to(old):
            return root / value.relative_to(old)
        return value

    paths = replace(task.paths, **{f.name: moved(getattr(task.paths, f.name)) for f in fields(task.paths)})
    return replace(task, path=root, paths=paths)


class NodeAgent:
    """The run's agent on one node (a Ray actor): its attempts run concurrently on its event loop."""

    def __init__(self) -> None:
        import benchflow.jobs.trial  # noqa: F401 - at the agent's start (the driver starts it early), not its first attempt

        self.reaped: set[tuple[str, str]] = set()
        """(backend, job) pairs already cleared of what killed attempts of the job left on this node."""
        self.ran: dict[str, asyncio.Event] = {}
        """Trial -> set when its run phases are over (until the driver has heard it)."""
        self.verifying: dict[str, asyncio.Event] = {}
        """Trial -> set when its verifier starts or its run phases end (until the driver has heard it)."""
        self.held: dict[str, asyncio.Event] = {}
        """Held trial -> set when the driver hands it the resources of a finishing attempt."""

    async def run_attempt(self, work: NodeWork, task_folder: bytes) -> NodeOutcome:
        """Run one attempt here. Cancelled (``ray.cancel``), the trial removes its sandbox before this ends."""
        ran, verifying = _event(self.ran, work.trial), _event(self.verifying, work.trial)
        go = _event(self.held, work.trial) if work.held else None
        try:
            return await self._attempt(work, task_folder, _RunPhases(ran, verifying, go), verifying)
        finally:
            ran.set()  # an attempt that never reached its agent is done with its run phases all the same
            verifying.set()
            self.held.pop(work.trial, None)

    async def run_phases_done(self, trial: str) -> None:
        """Returns once ``trial``'s agent and verifier are done (or the attempt ended without them)."""
        try:
            await _event(self.ran, trial).wait()
        finally:
            self.ran.pop(trial, None)

    async def verifier_started(self, trial: str) -> None:
        """Returns once ``trial``'s verifier has started (or its run phases are over)."""
        try:
            await _event(self.verifying, trial).wait()
        finally:
            self.verifying.pop(trial, None)

    def go(self, trial: str) -> None:
        """The held ``trial`` has its resources: its agent may start (once its sandbox is ready).
        May run before its ``run_attempt`` starts (an async actor does not keep the call order)."""
        _event(self.held, trial).set()

    async def _attempt(self, work: NodeWork, task_folder: bytes, slot: _RunPhases,
                       verifying: asyncio.Event) -> NodeOutcome:
        """The attempt in a scratch folder, removed whatever happens; ``ran`` is set when its run phases end."""
        node = node_identity(work.cluster)
        parent = scratch_root() / node["node_id"][:16]
        parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{work.trial}-", dir=parent))
        try:
            root = await asyncio.to_thread(unpack, task_folder, scratch / "task", Path(work.task.path).name)
            result = await self._run(work, rebase(work.task, root), scratch, slot, verifying)
            folder = scratch / "job" / work.job_name / work.trial
            await asyncio.to_thread(_note_node, folder, work, node)
            return NodeOutcome(trial=work.trial, result=result, folder=await asyncio.to_thread(pack, folder), node=node)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    async def _run(self, work: NodeWork, task: Any, scratch: Path, slot: _RunPhases,
                   verifying: asyncio.Event) -> dict[str, Any]:
        from benchflow.jobs.layout import JobPaths
        from benchflow.jobs.trial import TrialRequest, run_trial
        from benchflow.sandbox import get_backend

        job = JobPaths(scratch / "job" / work.job_name)
        job.root.mkdir(parents=True)
        ca_bundle = None
        if work.ca_bundle is not None:
            ca_bundle = atomic.write_bytes(scratch / "ca-bundle.pem", work.ca_bundle)
        backend = get_backend(work.backend_name)
        job_label = work.labels.get("benchflow.job")
        if job_label and (work.backend_name, job_label) not in self.reaped:  # what killed attempts left here
            from benchflow.sandbox.orphans import reap

            self.reaped.add((work.backend_name, job_label))
            await asyncio.to_thread(reap, backend, job_label)
        models = RemoteModelAccess(work.link) if work.link is not None else None

        def on_phase(trial: str, phase: str) -> None:
            if phase == "verifier":
                verifying.set()
            if models is not None:
                models.report_phase(trial, phase)

        request = TrialRequest(task=task, digest=work.digest, prompts=work.prompts, job=job, spec=work.spec,
                               agent=work.agent, backend=backend, backend_name=work.backend_name,
                               attempt=work.attempt, labels=work.labels, seed=work.seed, models=models, fit=work.fit,
                               task_secrets=work.task_secrets, ca_bundle=ca_bundle, agent_env=work.agent_env,
                               provenance=work.provenance, name=work.trial, on_phase=on_phase)
        request.run_slot = slot
        try:
            return await run_trial(request)
        finally:
            if models is not None:
                await models.stop()


def _event(events: dict[str, asyncio.Event], trial: str) -> asyncio.Event:
    return events.setdefault(trial, asyncio.Event())


class _RunPhases:
    """The trial's run slot on a node: nothing to wait for (the placement group holds the
    resources) unless the trial is held (``go``); leaving it (agent and verifier done) sets ``ran``."""

    def __init__(self, ran: asyncio.Event, verifying: asyncio.Event, go: asyncio.Event | None) -> None:
        self.ran, self.verifying, self.go = ran, verifying, go

    async def __aenter__(self) -> None:
        if self.go is not None:
            await self.go.wait()

    async def __aexit__(self, *exc: object) -> None:
        self.ran.set()
        self.verifying.set()


def _note_node(folder: Path, work: NodeWork, node: dict[str, Any]) -> None:
    """``config.json`` says which node ran the trial, and the task folder as the driver knows it
    (not this node's scratch copy)."""
    from benchflow.records import TrialConfig, Unreadable, read_record, write_record

    path = TrialPaths(folder).config
    try:
        config = read_record(TrialConfig, path)
    except Unreadable:
        return
    write_record(path, TrialConfig.model_validate({**config.to_json(), "executor": node,
                                                   "task_path": str(work.task.path)}))
