"""``plan_branch``: the run's plan (tasks, prompts, backend, run card) plus what only branching refuses.

Refused before anything starts (exit 2 for a bad flag, 1 for a run card that
refuses): a backend without snapshots (``Capabilities.snapshots``), kept
snapshots where they cannot outlive their sandbox, ``--snapshot-layers
environment|both`` for a task that declares no environment state (and
``environment`` with isolated or nested children, which need a sandbox
snapshot), and ``--resume-session`` where no conversation can be reloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchflow.jobs.spec import RunSpec, Selection

from .spec import BranchSpec, BranchSpecError, check_children

if TYPE_CHECKING:
    from benchflow.agents.base import Agent
    from benchflow.jobs.plan import PlannedTask
    from benchflow.sandbox.base import Backend


class BranchRefused(BranchSpecError):
    """The backend, the agent or a task cannot branch as asked; nothing started (exit 2)."""


@dataclass
class BranchPlan:
    run_spec: RunSpec
    tasks: list[PlannedTask]
    sandbox: str
    backend: Backend
    agent: Agent
    tasks_dir: str | None


def refuse_resume(agent: Agent, harness: str, at_prompt: int, flag: str = "--resume-session") -> None:
    """What can be known before anything starts about reloading a conversation (ACP ``session/load``):
    a control or native-harness agent has none, and at prompt 0 there is none yet. Whether an ACP
    agent advertises ``loadSession`` is known once it has answered ``initialize``.

    Raises:
        BranchRefused: with the reason.
    """
    if agent.is_control or harness != "acp":
        raise BranchRefused(f"{flag}: agent {agent.name} does not speak ACP here, so it advertises no "
                            "loadSession and has no conversation to reload; leave it out and give prompts "
                            "that stand alone")
    if at_prompt < 1:
        raise BranchRefused(f"{flag}: at prompt 0 there is no conversation to reload yet; give "
                            "--checkpoint-after-prompt 1 or more")


def refuse_layers(spec: BranchSpec, tasks: list[PlannedTask]) -> None:
    """``--snapshot-layers environment|both`` needs every task to declare its state; ``environment``
    alone takes no sandbox snapshot, so its children run one after another in the parent's sandbox.

    Raises:
        BranchRefused: with the reason and the fix.
    """
    from .env_state import declared_state

    flag = f"--snapshot-layers {spec.snapshot_layers}"
    for planned in tasks:
        if declared_state(planned.task.paths.task_dir) is None:
            raise BranchRefused(f"{flag}: task {planned.name} declares no environment state (an environment.toml "
                                "next to its task.md with [environment] state = {kind = \"sqlite\", paths = [...]}); "
                                "add one or use --snapshot-layers sandbox")
    if spec.snapshot_layers != "environment":
        return
    if spec.isolated or any(c.parent is not None for c in spec.children):
        raise BranchRefused(f"{flag}: without a sandbox snapshot the children run one after another in the "
                            "parent's sandbox, so --isolate-children, --concurrency > 1 and parent= children "
                            "cannot work; use --snapshot-layers both")
    if spec.retain_snapshots:
        raise BranchRefused(f"{flag} takes no sandbox snapshot, so there is none to retain; drop "
                            "--retain-snapshots or use --snapshot-layers both")


def run_spec_for(spec: BranchSpec) -> RunSpec:
    """The ``RunSpec`` the trial phases and records read (one task at a time, like the reference)."""
    return RunSpec(tasks_dir=spec.tasks_dir, agent=spec.agent, model=spec.model,
                   reasoning_effort=spec.reasoning_effort, harness=spec.harness, agent_env=dict(spec.agent_env),
                   sandbox=spec.sandbox, prompts=list(spec.prompts), concurrency=1, jobs_dir=spec.jobs_dir,
                   job_name=spec.job_name, selection=Selection(include=list(spec.include)), ca_bundle=spec.ca_bundle)


def plan_branch(spec: BranchSpec) -> BranchPlan:
    """The plan, or the first reason it is refused.

    Raises:
        BranchSpecError: a bad --child tree or a refusal (see the module docstring).
        RunRefused: the run card refuses (e.g. the backend does not work here).
    """
    from benchflow import agents
    from benchflow.jobs.api import RunRefused
    from benchflow.jobs.plan import make_plan

    check_children(spec.children)
    run_spec = run_spec_for(spec)
    plan = make_plan(run_spec)
    if not plan.card.accepted:
        raise RunRefused("the run card refuses this run: " + "; ".join(plan.card.refusals[:5]))
    caps = plan.backend.capabilities
    if not caps.snapshots:
        raise BranchRefused(f"--sandbox {plan.sandbox} has no snapshots, and a branch starts every child from "
                            "one; use a sandbox that has them (bench doctor lists what each can do)")
    if (spec.retain_snapshots or spec.checkpoints or spec.from_checkpoint) and not caps.retained_snapshots:
        raise BranchRefused(f"--sandbox {plan.sandbox}: its snapshots are removed with their sandbox, so "
                            "--retain-snapshots, --checkpoints and --from-checkpoint cannot work; drop them or "
                            "use a sandbox whose snapshots can be kept")
    agent = agents.resolve(spec.agent, harness=spec.harness)
    if spec.resume_session:
        refuse_resume(agent, spec.harness, spec.at_prompt)
    if spec.snapshot_layers != "sandbox":
        refuse_layers(spec, plan.tasks)
    n_prompts = max(len(t.prompts) for t in plan.tasks)
    if spec.at_prompt > n_prompts:
        raise BranchSpecError(f"--checkpoint-after-prompt {spec.at_prompt}: the parent has only {n_prompts} "
                              "prompt(s); give at most that many, or more --prompt options")
    if len(plan.tasks) > 1 and spec.from_checkpoint:
        raise BranchSpecError("--from-checkpoint branches one task again; select it with --include")
    return BranchPlan(run_spec=run_spec, tasks=plan.tasks, sandbox=plan.sandbox, backend=plan.backend,
                      agent=agent, tasks_dir=plan.tasks_dir)
