"""What a cluster node does for one trial attempt: run it in a scratch folder, hand back its record and folder.

This is the body of the Ray task (imported by reference on the node, so every node needs the
same BenchFlow installed). The node never writes the job folder: it runs the ordinary
:func:`benchflow.jobs.trial.run_trial` against its own sandbox backend (its local Docker engine,
or ``local``) in a private scratch folder, notes in ``config.json`` which node ran it, and
returns the result document plus the packed trial folder for the driver to install.
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

from benchflow.util import atomic

from .gateway_link import LinkAddress, RemoteModelAccess
from .trial_bundle import pack, unpack

_REAPED: set[tuple[str, str]] = set()
"""(backend, job) pairs this worker process has already cleared of dead attempts' sandboxes."""


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


def run_attempt_on_node(work: NodeWork, task_folder: bytes) -> NodeOutcome:
    """Run one attempt here; the scratch folder is removed whatever happens."""
    node = node_identity(work.cluster)
    parent = scratch_root() / node["node_id"][:16]
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{work.trial}-", dir=parent))
    try:
        task = rebase(work.task, unpack(task_folder, scratch / "task", Path(work.task.path).name))
        result = asyncio.run(_run(work, task, scratch))
        folder = scratch / "job" / work.job_name / work.trial
        _note_node(folder, work, node)
        return NodeOutcome(trial=work.trial, result=result, folder=pack(folder), node=node)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _run(work: NodeWork, task: Any, scratch: Path) -> dict[str, Any]:
    from benchflow.jobs.layout import JobPaths
    from benchflow.jobs.trial import TrialRequest, run_trial
    from benchflow.sandbox import get_backend

    job = JobPaths(scratch / "job" / work.job_name)
    job.root.mkdir(parents=True)
    ca_bundle = None
    if work.ca_bundle is not None:
        ca_bundle = atomic.write_bytes(scratch / "ca-bundle.pem", work.ca_bundle)
    models = RemoteModelAccess(work.link) if work.link is not None else None
    backend = get_backend(work.backend_name)
    job_label = work.labels.get("benchflow.job")
    if job_label and (work.backend_name, job_label) not in _REAPED:  # what killed attempts of the job left here
        from benchflow.sandbox.orphans import reap

        await asyncio.to_thread(reap, backend, job_label)
        _REAPED.add((work.backend_name, job_label))
    request = TrialRequest(task=task, digest=work.digest, prompts=work.prompts, job=job, spec=work.spec,
                           agent=work.agent, backend=backend, backend_name=work.backend_name,
                           attempt=work.attempt, labels=work.labels, seed=work.seed, models=models, fit=work.fit,
                           task_secrets=work.task_secrets, ca_bundle=ca_bundle, agent_env=work.agent_env,
                           provenance=work.provenance, name=work.trial,
                           **({"on_phase": models.report_phase} if models is not None else {}))
    ticker = asyncio.create_task(_tick())
    try:
        return await run_trial(request)
    finally:
        ticker.cancel()
        if models is not None:
            await models.stop()


async def _tick() -> None:
    """Wake the loop a few times a second. ``ray.cancel`` arrives as a KeyboardInterrupt raised when
    Python code next runs in this thread, and an idle loop (a sandbox sleeping) runs none; raised
    here it stops the loop, and ``asyncio.run`` cancels the trial, which removes its sandbox."""
    while True:
        await asyncio.sleep(0.2)


def _note_node(folder: Path, work: NodeWork, node: dict[str, Any]) -> None:
    """``config.json`` says which node ran the trial, and the task folder as the driver knows it
    (not this node's scratch copy)."""
    from benchflow.records import TrialConfig, Unreadable, read_record, write_record

    path = folder / "config.json"
    try:
        config = read_record(TrialConfig, path)
    except Unreadable:
        return
    write_record(path, TrialConfig.model_validate({**config.to_json(), "executor": node,
                                                   "task_path": str(work.task.path)}))
