"""How a trial's agent phase runs: one runner (``jobs/trial.py``: environment → mode → verifier → record),
one mode per trial, chosen by :func:`trial_mode`.

The engine's own mode is the plain agent phase: every prompt in one session. A feature adds one through
the ``trial_mode`` point of :mod:`.extensions`, first one wins in the order of its table: a multi-step
task's steps (``benchflow.steps``), ``--checkpoints`` (:class:`benchflow.branch.retry.RunCheckpoints`), a
scene task's turns (``benchflow.scenes``), the task's simulated user (``benchflow.sim_user``). A feature's
mode runs in a started sandbox, so what it runs is imported there (the engine's ``ahead`` thread has
loaded it by then).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .extensions import TrialMode, hooks

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.sandbox.base import Sandbox

    from .layout import TrialPaths
    from .phases import TrialState
    from .trial_request import TrialRequest

__all__ = ["PlainMode", "trial_mode"]


@dataclass
class PlainMode:
    """The plain agent phase: every prompt in one session; a feature's mode subclasses it."""

    req: TrialRequest
    paths: TrialPaths
    prompts: list[str]
    verifier_runs = True
    """False for a mode that verifies as it goes (steps): the runner's verifier phase is left out."""
    opens_network = False

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        from .phases import agent_phase

        await agent_phase(self.req, sandbox, self.paths, self.prompts, sink, state, timing)

    async def after_verifier(self, sandbox: Sandbox, state: TrialState) -> None:
        return None

    def annotate(self, result: dict[str, Any]) -> None:
        return None


def trial_mode(req: TrialRequest, paths: TrialPaths, prompts: list[str]) -> TrialMode | PlainMode:
    """The trial's mode: the first a feature makes for it (steps, ``--checkpoints``, scenes, the simulated
    user), else plain.

    A feature's mode is made before the sandbox starts (checkpoints write ``tree.json`` first)."""
    for make in hooks(req.spec, "trial_mode"):
        mode = make(req, paths, prompts)
        if mode is not None:
            return mode
    return PlainMode(req, paths, prompts)
