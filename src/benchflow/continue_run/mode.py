"""A continued trial as a mode of the one trial runner (``jobs.trial.run_trial(req, mode)``).

The agent phase is the plain one (the original's prompts in one session); what makes it a
continuation is the trial's gateway route, registered with a :class:`benchflow.gateway.replay.Replay`
before the phase opens it. After the agent, a strict divergence becomes the trial's error and the
verifier is left out; otherwise the verifier scores the workspace as the plain mode does (after a
replay-only run: the workspace rebuilt up to the cut point). :meth:`ContinueMode.annotate` adds the
``continued`` block to ``result.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchflow.errors import BenchError
from benchflow.gateway.replay import DIVERGED, Replay
from benchflow.jobs.modes import PlainMode
from benchflow.records.trial import Continuation

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.jobs.phases import TrialState
    from benchflow.sandbox.base import Sandbox

    from .source import SourceTrial


class ReplayDiverged(BenchError):
    """``--strict-divergence``: the continuation stopped at the first call that left the recording (exit 1)."""

    category = DIVERGED


@dataclass
class ContinueMode(PlainMode):
    """The plain agent phase behind a replaying route; the verdict and the ``continued`` block after it."""

    replay: Replay
    source: SourceTrial
    live_model: str | None
    strict: bool

    @property
    def verifier_runs(self) -> bool:  # type: ignore[override]
        """False once a strict divergence stopped the agent: the continuation failed, nothing to score."""
        return self.replay.fatal is None

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        await super().agent_phase(sandbox, sink, state, timing)
        if self.replay.fatal is not None:
            state.error = self.replay.fatal + (" (--strict-divergence)" if self.strict else "")
            state.error_category = DIVERGED

    def annotate(self, result: dict[str, Any]) -> None:
        source = self.source
        result["continued"] = Continuation(
            from_trial=str(source.paths.root), from_error_category=source.error_category, from_reward=source.reward,
            live_model=self.live_model, replay_only=not self.replay.live, strict_divergence=self.strict,
            replayed_tokens=self.replay.replayed_tokens, **self.replay.document(),
        ).model_dump(mode="json")
