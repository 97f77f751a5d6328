"""A branched trial as a mode of the one trial runner (``jobs.trial.run_trial(req, mode)``).

The runner brings the sandbox up (environment phase), then this mode's agent phase: restore the
``--from-checkpoint`` snapshot, if any → the parent's prompts up to the checkpoint (a snapshot kept
after each ``--checkpoints`` prompt) → the fork's snapshot → every unfinished child
(:mod:`.forks`) → with ``--parent continue``, restore once more, send the remaining prompts and
verify. The runner's verifier is left out (each child and the continued parent verify themselves),
and so is its agent network: each agent here gets its own around it, as the sandbox it runs in is
restored in between. The runner records the result, to which :meth:`BranchMode.annotate` adds the
``branch`` block. A rerun runs only what is unfinished.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from benchflow.agents.base import AgentOutcome
from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.jobs.agent_network import agent_network
from benchflow.jobs.layout import TrialPaths
from benchflow.jobs.phases import TrialState, verifier_phase
from benchflow.jobs.trial_request import TrialRequest, sandbox_spec
from benchflow.sandbox.base import Sandbox, SandboxSpec

from .checkpoint import send_prompts
from .env_state import DeclaredState
from .forks import back_to, fork_point, run_fork
from .spec import BranchSpec, checkpoint_after
from .tree import ROOT_FORK, TreeFile


@dataclass
class BranchMode:
    """One branched trial: the parent, its forks and their children (``jobs.extensions.TrialMode``)."""

    verifier_runs = False
    opens_network = True

    spec: BranchSpec
    req: TrialRequest
    """The trial's request, ``bridge_mounts`` off (see :meth:`session_spec`)."""
    paths: TrialPaths
    tree: TreeFile
    task_prompts: list[str]
    """The task's own prompts (what a child without a prompt runs when the checkpoint is after the last)."""
    installed: bool = False
    start_from: str | None = None
    """A kept snapshot to restore first (``--from-checkpoint``)."""
    env_state: DeclaredState | None = None
    """The task's declared database state, captured at each fork (``--snapshot-layers environment|both``)."""
    clean_forks: set[str] = field(default_factory=set)
    """Forks whose snapshot holds no earlier agent's ``/logs/agent``: their children need not clear it."""

    @property
    def prompts(self) -> list[str]:
        return self.tree.tree.parent_prompts

    def session_spec(self) -> SandboxSpec:
        """The spec of every sandbox of the trial: the runner's and each child's started from a snapshot.
        No host mounts for the model bridge: a restored or isolated sandbox reaches the gateway
        through its exec stream, whatever trial name its route has."""
        return sandbox_spec(self.req, self.paths.name)

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        """Everything after the environment phase; the parent's outcome and verdict go on ``state``."""
        if self.start_from is not None:  # part of the environment: before any agent's network is set up
            t = time.monotonic()
            await sandbox.restore(self.start_from)
            timing["environment_setup"] = timing.get("environment_setup", 0.0) + time.monotonic() - t
        spec, tree = self.spec, self.tree
        at = tree.tree.checkpoint_after_prompt
        self.installed = state.installed_by_layer
        if at > 0:
            await self._parent_prompts(sandbox, 0, at, sink, state, timing)
            self.installed = self.installed or state.outcome is not None
            if state.error is not None and state.outcome is None:
                return  # the parent never ran: no state to branch from
            if spec.resume_session and not (state.outcome and state.outcome.load_session):
                state.error = (f"--resume-session: agent {self.req.agent.name} does not advertise loadSession in "
                               "its ACP initialize capabilities, so no child could reload the parent's "
                               "conversation; run without --resume-session and give each child a prompt that "
                               "stands alone")
                state.error_category = "agent_integration"
                return
        ref: str | None = None
        forked = not tree.fork_done(ROOT_FORK)
        if forked:
            ref = await fork_point(self, sandbox, ROOT_FORK)
            tree.set_fork(ROOT_FORK, snapshot=ref, snapshot_kept=spec.retain_snapshots and ref is not None,
                          status="running",
                          session_id=state.outcome.session_id if state.outcome is not None else None)
            await run_fork(self, sandbox, ROOT_FORK, ref, dirty=False)
        if spec.parent != "continue":
            return
        if forked:
            await back_to(self, sandbox, ROOT_FORK, ref)
        state.error = state.error_category = None
        if self.prompts[at:]:
            await self._parent_prompts(sandbox, at, len(self.prompts), sink, state, timing)
        elif state.outcome is None:
            state.outcome = AgentOutcome(n_prompts=0, trajectory_source=self.req.agent.name)
        if state.verifier_allowed:
            await verifier_phase(self.req, sandbox, self.paths, state, timing)

    async def _parent_prompts(self, sandbox: Sandbox, start: int, stop: int, sink: AcpTrajectoryFile,
                              state: TrialState, timing: dict[str, float]) -> None:
        """Send parent prompts ``start..stop`` in one agent phase per stretch between ``--checkpoints``,
        keeping a snapshot after each checkpoint prompt (at most ``--checkpoint-keep``, oldest deleted).
        From ``start`` > 0 (``--parent continue``) the network records of the prompts before are kept."""
        points = checkpoint_after(self.spec.checkpoints, len(self.prompts))
        async with agent_network(self.req, sandbox, self.paths, state, continued=start > 0):  # metadata, proxy
            if state.error is None:
                await send_prompts(self.req, sandbox, self.paths, self.prompts, start, stop, points,
                                   self.spec.checkpoint_keep, self.tree, sink, state, timing)

    async def after_verifier(self, sandbox: Sandbox, state: TrialState) -> None:
        return None  # the continued parent verified in its agent phase

    def annotate(self, result: dict[str, Any]) -> None:
        """The ``branch`` block of ``result.json``: where the tree is and how it ended."""
        tree = self.tree
        children = {n.id: tree.observation(n.id) for n in tree.tree.nodes}
        rewards = [o.reward for o in children.values() if o is not None and o.reward is not None]
        result["branch"] = {"tree": "tree.json", "parent": tree.tree.parent_mode, "forks": len(tree.tree.forks),
                            "children": len(children),
                            "finished": sum(1 for o in children.values() if o and o.is_finished),
                            "best_reward": max(rewards) if rewards else None}
