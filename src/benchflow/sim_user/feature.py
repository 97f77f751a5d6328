"""The simulated user as a run feature (``jobs.extensions``): a task that declares one, run by a real agent,
has the plain agent phase with the user answering after the prompts (:func:`.user.converse`).

Every run asks it (the task switches it on), so this module imports only the engine's plain mode; the
conversation's code is imported in a started sandbox."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchflow.jobs.modes import PlainMode

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.jobs.layout import TrialPaths
    from benchflow.jobs.phases import TrialState
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Sandbox


class SimUserMode(PlainMode):
    """The plain agent phase with the task's simulated user answering after the prompts."""

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        from .user import converse

        await converse(self.req, sandbox, self.paths, self.prompts, sink, state, timing)


class SimUserFeature:
    name = "sim-user"

    def trial_mode(self, req: TrialRequest, paths: TrialPaths, prompts: list[str]) -> SimUserMode | None:
        """The oracle and nop solve or skip the task without one."""
        return SimUserMode(req, paths, prompts) if req.task.has_user and not req.agent.is_control else None


SIM_USER = SimUserFeature()
