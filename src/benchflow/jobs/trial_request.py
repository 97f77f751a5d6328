"""What the scheduler hands one trial: the task, the run's settings, the backend, and derived values."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from benchflow.agents.base import Agent
from benchflow.sandbox.base import SandboxSpec
from benchflow.sandbox.from_task import spec_for_task

from .extensions import hooks
from .layout import JobPaths

if TYPE_CHECKING:  # types only: a trial's request is built long after these are loaded
    from benchflow.sandbox.base import Backend
    from benchflow.sandbox.fit import Fit
    from benchflow.tasks import Task

    from .model_access import ModelAccess
    from .spec import RunSpec


@dataclass
class TrialRequest:
    """One attempt of one task, as the scheduler hands it to ``run_trial``."""

    task: Task
    """A loaded ``benchflow.tasks.Task``."""
    digest: str
    prompts: list[str]
    """The prompts, resolved once by the plan."""
    job: JobPaths
    spec: RunSpec
    agent: Agent
    backend: Backend
    backend_name: str
    attempt: int = 1
    labels: dict[str, str] = field(default_factory=dict)
    ca_bundle: Path | None = None
    on_phase: Callable[[str, str], None] = lambda _trial, _phase: None
    agent_env: dict[str, str] = field(default_factory=dict)
    """The agent's environment with secrets (never written to disk)."""
    models: ModelAccess | None = None
    """The job's ``ModelAccess`` (gateway + bridge) for agents that call models; None for controls."""
    seed: int | None = None
    """With --seeds: exported as BENCHFLOW_SEED to the agent, the oracle and the verifier."""
    run_slot: asyncio.Semaphore | None = None
    """Held for the agent and verifier phases (the scheduler's concurrency limit)."""
    fit: Fit | None = None
    """How the backend meets the task's sandbox request (``benchflow.sandbox.fit.Fit``, from the plan)."""
    provenance: dict[str, Any] | None = None
    """``source``/``dataset_name``/``dataset_version`` of fetched tasks (``Plan.provenance``), for config.json."""
    task_secrets: tuple[str, ...] = ()
    """Host values the task reads through ``--allow-task-env``: masked in every file of the trial folder."""
    name: str | None = None
    """The trial folder's name when the caller chose it (a remote executor, to find the attempt's
    sandbox after losing its node; ``bench branch``, to finish a branched trial in its folder); None:
    ``run_trial`` makes one."""
    bridge_mounts: bool = True
    """Whether the sandbox mounts the trial's model-bridge folder where the backend has host mounts.
    False for a branched trial: its snapshots are restored into sandboxes whose children have routes
    of their own, so every agent reaches the gateway through the exec stream."""

    @property
    def agent_user(self) -> str | None:
        """Who the agent runs as: the sandbox user, or root for an agent that runs as root (the oracle,
        as Harbor runs ``solve.sh``). Root gets no sandbox user and no ``chown`` of the workspace: a
        git repository the image left root-owned stays root's, as by hand (git refuses a repository
        another user owns)."""
        # getattr: an agent plugin written before the attribute runs as the sandbox user, as it did
        return None if getattr(self.agent, "runs_as_root", False) else self.spec.sandbox_user


def seed_env(seed: int | None) -> dict[str, str]:
    return {} if seed is None else {"BENCHFLOW_SEED": str(seed)}


def sandbox_spec(req: TrialRequest, trial: str) -> SandboxSpec:
    options: dict[str, Any] = {"digest": req.digest}
    for sandbox_options in hooks(req.spec, "sandbox_options"):  # e.g. whether the image keeps the task's skills,
        options.update(sandbox_options(req))                    # a staged build context and its digest
    spec = spec_for_task(req.task, sandbox_user=req.agent_user,
                         base_image_override=req.spec.base_image_override, ca_bundle=req.ca_bundle,
                         setup_timeout_sec=req.spec.sandbox_setup_timeout_sec, **options,
                         labels={**req.labels, "benchflow.trial": trial, "benchflow.task": req.task.name},
                         mounts=None if req.models is None or not req.bridge_mounts
                         else req.models.mounts_for(trial, req.backend.capabilities))
    return req.fit.apply(spec) if req.fit is not None else spec


def idle_timeout(req: TrialRequest) -> float | None:
    """``--agent-idle-timeout`` (0 turns it off), else 10 min, 30 min at effort xhigh/max."""
    value = req.spec.agent_idle_timeout_sec
    if value == 0:
        return None
    if value is not None:
        return value
    return 1800.0 if req.spec.reasoning_effort in ("xhigh", "max") else 600.0


def agent_timeout(req: TrialRequest) -> float | None:
    base = req.task.config.agent.timeout_sec
    return None if base is None else float(base) * req.spec.timeout_multiplier
