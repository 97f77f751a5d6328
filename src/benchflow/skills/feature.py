"""Skills as a run feature (``jobs.extensions``): the policy checked up front, self-gen prompts, the
skills deployed after the agent's install (and, with ``--self-gen-no-internet``, its web tools turned off),
the image keeping the task's skills, and ``config.json``'s keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .policy import image_keeps_task_skills, policy_of, record, self_gen_prompts, sources

if TYPE_CHECKING:
    from benchflow.jobs.plan import Plan
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Sandbox


class SkillsFeature:
    name = "skills"

    def check_spec(self, spec: RunSpec) -> None:
        policy_of(spec)  # a mode without its folder, or a missing folder, is refused up front

    def plan_refusals(self, plan: Plan) -> list[str]:
        """An agent whose web tools ``--self-gen-no-internet`` cannot turn off is refused up front."""
        spec = plan.spec
        if not spec.skills.no_internet or spec.agent in ("oracle", "nop", "empty"):
            return []
        from benchflow.agents.registry import get_agent_config
        from benchflow.errors import BenchError

        from .web_tools import switches

        try:
            name = get_agent_config(spec.agent).name
        except BenchError:
            return []  # an unknown agent is refused on its own
        if name in switches():
            return []
        return [f"--self-gen-no-internet: bench does not know how to turn off {name}'s web tools (it can for "
                f"{', '.join(sorted(switches()))}); run without it or with one of those agents"]

    def prompts(self, spec: RunSpec, prompts: list[str]) -> list[str]:
        return self_gen_prompts(policy_of(spec), prompts)

    def comparable(self, spec: RunSpec, task: Any, agent_name: str) -> dict[str, Any]:
        return {"skill_mode": policy_of(spec).mode}

    def trial_record(self, req: TrialRequest) -> dict[str, Any]:
        return record(policy_of(req.spec), req.task, req.agent)

    def sandbox_options(self, req: TrialRequest) -> dict[str, Any]:
        return {"bundled_skills": image_keeps_task_skills(policy_of(req.spec), req.task, req.agent)}

    async def before_agent(self, req: TrialRequest, sandbox: Sandbox, user: str | None) -> None:
        from .deploy import deploy_skills

        await deploy_skills(sandbox, sources(policy_of(req.spec), req.task), req.agent, user, sandbox.workdir)
        if req.spec.skills.no_internet and not req.agent.is_control:
            from .web_tools import turn_off

            await turn_off(sandbox, req.agent.name)


SKILLS = SkillsFeature()
