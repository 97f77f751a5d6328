"""How a trial's agent phase runs: one runner (``jobs/trial.py``: environment → mode → verifier → record),
one mode per trial, chosen by :func:`trial_mode`.

The engine's own modes are here: a multi-step task's steps (each verified after its own turn, so the
runner's verifier does not run), a scene task's turns, and the plain agent phase with the task's
simulated user, if any. A feature adds one through the ``trial_mode`` point of :mod:`.extensions`
(``--checkpoints``: :class:`benchflow.branch.retry.RunCheckpoints`). Each runs in a started sandbox,
so its module is imported there (the engine's ``ahead`` thread has loaded it by then).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .extensions import TrialMode, hooks
from .scene_plan import wants_scenes

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.sandbox.base import Sandbox

    from .layout import TrialPaths
    from .phases import TrialState
    from .trial_request import TrialRequest

__all__ = ["PlainMode", "trial_mode"]


@dataclass
class PlainMode:
    """The plain agent phase: every prompt in one session, the task's simulated user answering after
    them when it has one."""

    req: TrialRequest
    paths: TrialPaths
    prompts: list[str]
    verifier_runs = True
    """False for a mode that verifies as it goes (steps): the runner's verifier phase is left out."""
    opens_network = False

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        from .sim_user import converse

        await converse(self.req, sandbox, self.paths, self.prompts, sink, state, timing)

    async def after_verifier(self, sandbox: Sandbox, state: TrialState) -> None:
        return None

    def annotate(self, result: dict[str, Any]) -> None:
        return None


class StepsMode(PlainMode):
    """A multi-step task: each step's prompt, then its own verifier, in one sandbox."""

    verifier_runs = False

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        from .steps import run_steps

        await run_steps(self.req, sandbox, self.paths, sink, state, timing)


class ScenesMode(PlainMode):
    """A scene task run by a real agent: every turn of every scene, each a session of its role's agent."""

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        from .scenes import run_scenes

        await run_scenes(self.req, sandbox, self.paths, sink, state, timing)


def trial_mode(req: TrialRequest, paths: TrialPaths, prompts: list[str]) -> TrialMode | PlainMode:
    """The trial's mode: its task's steps, else a feature's (``--checkpoints``), else its scenes, else plain.

    A feature's mode is made before the sandbox starts (checkpoints write ``tree.json`` first)."""
    if req.task.config.steps:
        return StepsMode(req, paths, prompts)
    for make in hooks(req.spec, "trial_mode"):
        mode = make(req, paths, prompts)
        if mode is not None:
            return mode
    if wants_scenes(req):
        return ScenesMode(req, paths, prompts)
    return PlainMode(req, paths, prompts)
