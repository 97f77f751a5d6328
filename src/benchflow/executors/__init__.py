"""Where a job's trials run: in this process (the default) or as tasks on a Ray cluster.

An executor runs one attempt of one trial and returns its result document; the scheduler
(retries, budgets, concurrency) and the job folder stay with the driver either way.

- ``in-process``: the engine's own :func:`benchflow.jobs.trial.run_trial` here (this package is not
  loaded: it is the ``executors`` feature of ``jobs.extensions``, switched on by another ``--executor``).
- ``ray`` / ``ray://HOST:PORT``: each attempt a Ray task on a node with its own sandbox backend
  (:mod:`.ray_executor`); the model gateway stays here, reached through a link (:mod:`.gateway_link`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol

from benchflow.errors import ConfigError

IN_PROCESS = "in-process"
_RAY_CLIENT = re.compile(r"^ray://[^\s/:]+:\d{1,5}$")


class Executor(Protocol):
    async def run_attempt(self, request: Any) -> dict[str, Any]:
        """Run one attempt (a ``TrialRequest``); its folder is in the job when this returns."""


def check_executor(value: str) -> str:
    """``in-process``, ``ray`` or ``ray://HOST:PORT``.

    Raises:
        ValueError: any other spelling (the run-spec validator turns it into a one-line error).
    """
    if value in (IN_PROCESS, "ray") or _RAY_CLIENT.match(value):
        return value
    raise ValueError(f"--executor {value!r}: give in-process, ray (this machine's or $RAY_ADDRESS's cluster) "
                     "or ray://HOST:PORT (Ray Client)")


def preflight(spec: Any) -> None:
    """Refuse, before the job folder is touched, a remote executor that cannot run here.

    Raises:
        ConfigError: Ray not installed (naming the extra), an option it cannot honour, or a cluster
            address nothing answers at.
    """
    if (getattr(spec, "executor", IN_PROCESS) or IN_PROCESS) == IN_PROCESS:
        return
    from .ray_cluster import import_ray, probe

    _refuse_with_ray(spec)
    import_ray()
    probe(spec.executor)


def _refuse_with_ray(spec: Any) -> None:
    """What a trial on another machine cannot do, refused before anything starts."""
    reasons = []
    if spec.keep_sandbox != "never":
        reasons.append("--keep-sandbox (the sandbox would stay on a cluster node)")
    if spec.checkpoints.after:
        reasons.append("--checkpoints (snapshots would stay on a cluster node)")
    if spec.workers.concurrency:
        reasons.append("--worker-concurrency (Ray spreads the trials itself)")
    if reasons:
        raise ConfigError(f"--executor {spec.executor}: cannot be combined with {reasons[0]}")


@contextlib.asynccontextmanager
async def open_executor(spec: Any, *, models: Any = None, tasks: list[Any] = ()) -> AsyncIterator[Executor]:
    """The remote executor ``spec.executor`` names, ready for the job's ``tasks`` (``PlannedTask``s);
    with ``models`` (the job's gateway) a remote executor also opens the gateway link.

    Raises:
        ConfigError: Ray missing, the cluster unreachable, an option it cannot honour, or a task
            no node of the cluster is big enough for.
    """
    executor = spec.executor
    from . import ray_cluster
    from .gateway_link import GatewayLink
    from .ray_executor import RayExecutor, resources

    preflight(spec)
    ray = ray_cluster.import_ray()
    cluster, connected = ray_cluster.connect(ray, executor)  # on the main thread: Ray's signal handlers
    link = None
    try:
        _refuse_too_big(await asyncio.to_thread(ray_cluster.largest_node, ray), tasks, resources)
        address = None
        if models is not None:
            link = GatewayLink(models, await asyncio.to_thread(ray_cluster.link_host, ray), ray_cluster.link_port(),
                               on_phase=lambda trial, phase: runner.phase(trial, phase))
            address = await link.start()
        runner = RayExecutor(ray=ray, cluster=cluster, link=address)
        try:
            yield runner
        finally:
            await asyncio.shield(runner.close())
    finally:
        if link is not None:
            await asyncio.shield(link.stop())
        if connected:
            ray.shutdown()


def _refuse_too_big(largest: dict[str, float], tasks: list[Any], resources: Any) -> None:
    for planned in tasks:
        need = resources(planned.task, planned.fit)
        for key, have in (("num_cpus", largest["CPU"]), ("memory", largest["memory"]), ("num_gpus", largest["GPU"])):
            if need[key] > have:
                unit = (lambda v: f"{v / 2**20:.0f} MiB") if key == "memory" else (lambda v: f"{v:g}")
                raise ConfigError(f"task {planned.name}: asks for {unit(need[key])} {key.removeprefix('num_')}, "
                                  f"more than any node of the Ray cluster has ({unit(have)}); "
                                  "add a bigger node or lower the task's sandbox request")
