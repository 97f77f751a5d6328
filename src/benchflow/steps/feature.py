"""Multi-step tasks as a run feature (``jobs.extensions``): a task with ``steps`` runs them in order, each
verified after its own turn (:mod:`.runner`), so the runner's verifier phase is left out; the oracle needs a
solution for every step.

Every run asks it (a task, not a setting, switches it on), so this module imports only the engine's plain
mode; what runs the steps is imported in a started sandbox."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchflow.jobs.modes import PlainMode

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.jobs.layout import TrialPaths
    from benchflow.jobs.phases import TrialState
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Sandbox


class StepsMode(PlainMode):
    """A multi-step task: each step's prompt, then its own verifier, in one sandbox."""

    verifier_runs = False

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        from .runner import run_steps

        await run_steps(self.req, sandbox, self.paths, sink, state, timing)


class StepsFeature:
    name = "steps"

    def has_oracle(self, task: Any) -> bool | None:
        if not task.config.steps:
            return None
        from .dirs import has_oracle

        return has_oracle(task)

    def trial_mode(self, req: TrialRequest, paths: TrialPaths, prompts: list[str]) -> StepsMode | None:
        return StepsMode(req, paths, prompts) if req.task.config.steps else None


STEPS = StepsFeature()
