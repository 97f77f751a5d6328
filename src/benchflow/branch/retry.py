"""``bench run --checkpoints`` and ``--retry-from-checkpoint``: one trial's checkpoints and its retry.

With ``--checkpoints`` the trial's prompts go out in one agent phase per
stretch between checkpoints (:func:`.checkpoint.send_prompts`); each kept
snapshot is listed in the trial's ``tree.json``, so ``bench branch
--from-checkpoint <trial>`` can fork from it later. With
``--retry-from-checkpoint``, a trial that failed or timed out gets one retry in
its own sandbox session: restore the last checkpoint → agent phase → verifier
phase (:func:`.child.run_child`), written like a branch child under
``branches/retry/children/retry/``. The trial's own reward is kept;
``result.json``'s ``retry`` block reports the retry's beside it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchflow.jobs.layout import TrialPaths
from benchflow.jobs.phases import TrialState
from benchflow.jobs.prompts import resolve_prompts
from benchflow.records.branch import Fork, Node, Observation, TreeRecord
from benchflow.records.trial import CheckpointRetry

from .checkpoint import send_prompts
from .child import ChildRun, run_child
from .spec import checkpoint_after
from .tree import TreeFile, child_paths

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Sandbox

log = logging.getLogger(__name__)

RETRY = "retry"
"""The retry's fork and node id in ``tree.json``."""
FEEDBACK_REF = "@verifier_feedback"
FEEDBACK_TAIL = 2000
"""Characters of the failed trial's verifier output a ``@verifier_feedback`` prompt carries."""


@dataclass
class RunCheckpoints:
    """The checkpoints (and the retry) of one ``bench run`` trial: its mode (``jobs.extensions.TrialMode``)."""

    verifier_runs = True
    opens_network = False

    req: TrialRequest
    paths: TrialPaths
    prompts: list[str]
    tree: TreeFile
    block: CheckpointRetry | None = None
    """The ``retry`` block of result.json, once a retry was due."""

    @classmethod
    def for_trial(cls, req: TrialRequest, paths: TrialPaths, prompts: list[str]) -> "RunCheckpoints | None":
        """None unless the run asked for ``--checkpoints``; else the trial's (new) ``tree.json``."""
        if not req.spec.checkpoints.after:
            return None
        record = TreeRecord(trial_name=paths.name, task_name=req.task.name, agent=req.agent.name,
                            model=req.spec.model, sandbox=req.backend_name, parent_prompts=list(prompts))
        tree = TreeFile(paths, record)
        tree.save()
        return cls(req=req, paths=paths, prompts=list(prompts), tree=tree)

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        """Every prompt, a retained snapshot kept after each checkpoint prompt."""
        points = checkpoint_after(self.req.spec.checkpoints.after, len(self.prompts))
        await send_prompts(self.req, sandbox, self.paths, self.prompts, 0, len(self.prompts), points,
                           self.req.spec.checkpoints.keep, self.tree, sink, state, timing)

    async def after_verifier(self, sandbox: Sandbox, state: TrialState) -> None:
        """With ``--retry-from-checkpoint``: one retry from the last checkpoint when the trial ended the
        way it names (after its verifier ran, in the same sandbox). A retry that breaks is reported in
        its block; the trial's own record is never changed by it."""
        trigger = retry_trigger(self.req.spec.checkpoints.retry, state)
        if trigger is None:
            return
        try:
            await self._retry(sandbox, state, trigger)
        except Exception as exc:  # noqa: BLE001 - the retry's failure is its own, not the trial's
            log.debug("%s: the checkpoint retry failed", self.paths.name, exc_info=True)
            self.block = CheckpointRetry(trigger=trigger, status="errored", error=f"{type(exc).__name__}: {exc}")

    async def _retry(self, sandbox: Sandbox, state: TrialState, trigger: str) -> None:
        settings = self.req.spec.checkpoints
        kept = [c for c in self.tree.tree.checkpoints if c.kept and c.snapshot]
        if not kept:
            self.block = CheckpointRetry(trigger=trigger, status="skipped",
                                         error="no checkpoint was taken before the trial ended (--checkpoints "
                                               "names prompts it never finished); nothing to retry from")
            return
        point = kept[-1]
        at = int(point.id.split(":", 1)[1])
        resume = None
        if settings.retry_resume_session:
            if not point.session_id or not (state.outcome and state.outcome.load_session):
                self.block = CheckpointRetry(
                    trigger=trigger, checkpoint=point.id, status="skipped", error_category="agent_integration",
                    error=f"--retry-resume-session: agent {self.req.agent.name} does not advertise loadSession in "
                          "its ACP initialize capabilities, so the trial's conversation cannot be reloaded")
                return
            resume = point.session_id
        prompts, source = self._retry_prompts(at, state)
        self._add_to_tree(point.snapshot, at, source)
        paths = child_paths(self.paths, RETRY, RETRY)
        run = ChildRun(req=self.req, paths=paths, fork=RETRY, parent_node=None, prompts=prompts,
                       prompt_source=source, installed=True, resume_session=resume)

        async def restore() -> None:
            await sandbox.restore(point.snapshot)

        log.info("%s: %s; retrying from checkpoint %s", self.paths.name, trigger, point.id)
        obs = await run_child(run, sandbox, restore=restore)
        self.tree.set_fork(RETRY, status="complete" if obs.is_finished else "partial")
        self.block = _block(obs, trigger, point.id, resume is not None, paths.root.relative_to(self.paths.root))

    def _retry_prompts(self, at: int, state: TrialState) -> tuple[list[str], str]:
        """``--retry-prompt`` (``@instruction`` alone is the task prompt, ``@verifier_feedback`` anywhere in it
        the failed trial's verdict), else the prompts after the
        checkpoint, else (a checkpoint after the last prompt) the task's prompts."""
        spec, task = self.req.spec, self.req.task
        prefix = task.config.agent.prompt_prefix
        if spec.checkpoints.retry_prompt is None:
            rest = self.prompts[at:]
            if rest:
                return rest, "parent"
            return resolve_prompts(task.instruction, [], prefix=prefix, extra_instruction=spec.extra_instruction), \
                "task"
        text = spec.checkpoints.retry_prompt
        if FEEDBACK_REF in text:
            text = text.replace(FEEDBACK_REF, verifier_feedback(self.paths, state))
        return resolve_prompts(task.instruction, [text], prefix=prefix, extra_instruction=spec.extra_instruction), \
            "retry-prompt"

    def _add_to_tree(self, snapshot: str, at: int, source: str) -> None:
        record = self.tree.tree
        record.forks = [f for f in record.forks if f.id != RETRY] + [
            Fork(id=RETRY, at_prompt=at, snapshot=snapshot, snapshot_kept=False, children=[RETRY], status="running")]
        record.nodes = [n for n in record.nodes if n.id != RETRY] + [
            Node(id=RETRY, fork=RETRY, path=f"branches/{RETRY}/children/{RETRY}", prompt_source=source)]
        self.tree.save()

    def annotate(self, result: dict[str, Any]) -> None:
        """Put the ``retry`` block on the trial's result document (its reward is left as it is)."""
        if self.block is not None:
            result["retry"] = self.block.model_dump(mode="json", exclude_none=True)


def retry_trigger(policy: str | None, state: TrialState) -> str | None:
    """``timeout`` or ``failure`` when ``policy`` asks for a retry of how the trial ended, else None."""
    if policy is None:
        return None
    timed_out = state.error_category == "timeout" or bool(state.outcome and state.outcome.timed_out)
    if timed_out:
        return "timeout" if policy in ("on-timeout", "both") else None
    rewards = getattr(state.verifier, "rewards", None) or {}
    passed = isinstance(rewards.get("reward"), (int, float)) and rewards["reward"] >= 1.0
    return "failure" if not passed and policy in ("on-failure", "both") else None


def verifier_feedback(paths: TrialPaths, state: TrialState) -> str:
    """The failed trial's reward and the tail of its verifier output, for ``@verifier_feedback``."""
    rewards = getattr(state.verifier, "rewards", None) or {}
    reward = rewards.get("reward")
    stdout = paths.verifier_dir / "test-stdout.txt"
    try:
        tail = stdout.read_text(encoding="utf-8", errors="replace")[-FEEDBACK_TAIL:].strip()
    except OSError:
        tail = ""
    verdict = f"scored {reward:g}" if isinstance(reward, (int, float)) else "not scored"
    error = getattr(state.verifier, "error", None)
    lines = [f"The previous attempt was {verdict} by the task's verifier."]
    if error:
        lines.append(f"The verifier reported: {error}")
    lines.append("The end of the verifier's output:\n" + tail if tail else "The verifier printed nothing.")
    return "\n".join(lines)


def _block(obs: Observation, trigger: str, checkpoint: str, resumed: bool, path: Path) -> CheckpointRetry:
    return CheckpointRetry(
        trigger=trigger, checkpoint=checkpoint, prompts=list(obs.request.get("prompts") or []),
        prompt_source=obs.request.get("prompt_source"), resume_session=resumed, status=obs.status,
        reward=obs.reward, rewards=obs.rewards, error=obs.error, error_category=obs.error_category,
        verifier_error=obs.verifier_error, total_tokens=obs.total_tokens, cost_usd=obs.cost_usd,
        sandbox_seconds=obs.sandbox_seconds, path=str(path))
