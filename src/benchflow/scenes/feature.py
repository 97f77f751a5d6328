"""Scenes as a run feature (``jobs.extensions``): a run config's ``scenes:`` read and laid over each task's,
the run card's refusals and warnings, the role agents installed beside the run's, ``config.json``'s
``scenes``, what a resumed job compares, and the turns as the trial's mode (:mod:`.runner`).

Every run asks it (a task's scenes switch it on as well as a run config's), so this module imports only the
engine's plain mode; a hook imports :mod:`.plan` for a task with scenes only, and the turns' runner is
imported in a started sandbox."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchflow.jobs.modes import PlainMode

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.jobs.layout import TrialPaths
    from benchflow.jobs.phases import TrialState
    from benchflow.jobs.plan import Plan
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Sandbox


class ScenesMode(PlainMode):
    """A scene task run by a real agent: every turn of every scene, each a session of its role's agent."""

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        from .runner import run_scenes

        await run_scenes(self.req, sandbox, self.paths, sink, state, timing)


def _asks(task: Any, spec: RunSpec) -> bool:
    """Whether the planning hooks have anything to say of ``task`` (scenes, the run's or its own, or a user)."""
    return bool(spec.scenes or task.scenes or task.has_user)


class ScenesFeature:
    name = "scenes"

    def parse_config(self, source: str, value: Any) -> list[dict[str, Any]]:
        from .run_config import parse_run_scenes

        return parse_run_scenes(source, value)

    def plan_refusals(self, plan: Plan) -> list[str]:
        return [f"{planned.name}: {issue}" for planned, issues, _ in self._issues(plan) for issue in issues]

    def plan_warnings(self, plan: Plan) -> list[str]:
        return [f"{planned.name}: {warning}" for planned, _, warnings in self._issues(plan) for warning in warnings]

    def _issues(self, plan: Plan) -> list[tuple[Any, list[str], list[str]]]:
        """Each task's (refusals, warnings): ``--checkpoints`` on scenes, ``--harness native`` for a user."""
        from .plan import run_issues

        return [(planned, *run_issues(planned.task, plan.spec)) for planned in plan.tasks
                if _asks(planned.task, plan.spec)]

    def comparable(self, spec: RunSpec, task: Any, agent_name: str) -> dict[str, Any]:
        """The scenes as played, which a run config's ``scenes`` change without changing the task's digest."""
        if not (spec.scenes or task.scenes):
            return {"scenes": []}
        from .plan import scenes_as_run, with_run_scenes

        return {"scenes": scenes_as_run(with_run_scenes(task, spec.scenes), spec, agent_name)}

    def task_view(self, spec: RunSpec, task: Any) -> Any:
        """A run config's scenes replace the task's."""
        if not spec.scenes:
            return task
        from .plan import with_run_scenes

        return with_run_scenes(task, spec.scenes)

    def trial_record(self, req: TrialRequest) -> dict[str, Any]:
        if not req.task.scenes:
            return {"scenes": []}
        from .plan import scene_record

        return {"scenes": scene_record(req)}

    def trial_mode(self, req: TrialRequest, paths: TrialPaths, prompts: list[str]) -> ScenesMode | None:
        """The oracle and nop solve or skip a scene task as one phase."""
        return ScenesMode(req, paths, prompts) if req.task.scenes and not req.agent.is_control else None

    def layer_agents(self, req: TrialRequest) -> list[Any]:
        if not req.task.scenes or req.agent.is_control:
            return []
        from .plan import role_agents

        return role_agents(req)


SCENES = ScenesFeature()
