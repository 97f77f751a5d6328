"""Skills as a run feature (``jobs.extensions``): the policy checked up front, self-gen prompts, the
skills deployed after the agent's install, the image keeping the task's skills, and ``config.json``'s keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .policy import image_keeps_task_skills, policy_of, record, self_gen_prompts, sources

if TYPE_CHECKING:
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Sandbox


class SkillsFeature:
    name = "skills"

    def check_spec(self, spec: RunSpec) -> None:
        policy_of(spec)  # a mode without its folder, or a missing folder, is refused up front

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


SKILLS = SkillsFeature()
