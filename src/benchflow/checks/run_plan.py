"""``bench tasks check --agent/--model/--sandbox-user/--verifier-sandbox``: what ``bench run`` with the
same settings would refuse or warn about before it starts, found by planning that run (nothing is
pulled, built or started)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RunSettings:
    """The run a check plans, as ``bench eval run`` takes it."""

    agent: str = "claude-agent-acp"
    model: str | None = None
    sandbox_user: str = "agent"
    """As ``--sandbox-user`` takes it: root (null, none) for root."""
    verifier_sandbox: str | None = None
    sandbox: str | None = None
    allow_task_env: tuple[str, ...] = ()


@dataclass
class PlanFindings:
    refusals: dict[str, list[str]] = field(default_factory=dict)
    """Task name -> what the run card refuses for it."""
    warnings: dict[str, list[str]] = field(default_factory=dict)
    verifier_source: dict[str, str] = field(default_factory=dict)
    """Task name -> where a separate verifier sandbox's image comes from (``--verifier-sandbox separate``)."""
    run_refusals: list[str] = field(default_factory=list)
    """What the card refuses for the whole run (its sandbox cannot run here)."""


def plan_findings(task_dir: Path, settings: RunSettings) -> PlanFindings:
    """Plan ``bench run TASK_DIR`` with ``settings`` and sort its run card by task.

    Raises:
        ConfigError: an unknown agent (or one that cannot run here), or a setting ``bench run``
            refuses as bad input.
    """
    from benchflow import agents
    from benchflow.jobs.config_file import build_run_spec
    from benchflow.jobs.plan import make_plan
    from benchflow.jobs.spec import agent_user

    agents.resolve(settings.agent)
    fields = {"targets": [str(task_dir)], "agent": settings.agent, "model": settings.model,
              "sandbox": settings.sandbox, "verifier.sandbox": settings.verifier_sandbox,
              "allow_task_env": list(settings.allow_task_env), "sandbox_user": agent_user(settings.sandbox_user)}
    spec = build_run_spec(fields=fields, source="bench check")
    if agent_user(settings.sandbox_user) is None:
        spec = spec.model_copy(update={"sandbox_user": None})
    plan = make_plan(spec, pull_images=False)
    found = PlanFindings()
    names = [planned.name for planned in plan.tasks]
    for kind, lines in (("refusals", plan.card.refusals), ("warnings", plan.card.warnings)):
        for line in lines:
            owner = next((name for name in names if line.startswith(f"{name}: ")), None)
            if owner is None:
                if kind == "refusals":
                    found.run_refusals.append(line)
                continue
            getattr(found, kind).setdefault(owner, []).append(line.removeprefix(f"{owner}: "))
    if spec.verifier.sandbox == "separate":
        for planned in plan.tasks:
            found.verifier_source[planned.name] = _verifier_source(planned)
    return found


def _verifier_source(planned: Any) -> str:
    own = planned.task.config.verifier.sandbox
    if own is not None:
        image = own.docker_image
        return (f"the task's verifier.sandbox image {image}" if image
                else "the task's verifier.sandbox settings, built from environment/Dockerfile")
    made = planned.fit.summary().split(" | ")[0] if planned.fit is not None else "the task's image"
    return f"the task's own image ({made})"
