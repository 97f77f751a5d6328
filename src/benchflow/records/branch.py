"""The records of a branched trial (``bench branch``): ``tree.json`` and each child's ``observation.json``.

``tree.json`` is the shape of the trial's branching: its forks (a snapshot and
the children started from it) and nodes (the children), with parent links and
whether each snapshot was kept. Each child folder
(``branches/<fork>/children/<node>/``) holds ``observation.json``: what the
child was asked and how it ended. A child is finished when its observation has
a reward or a verifier error (:attr:`Observation.is_finished`), which is the
rule a rerun resumes by. The advantage of a child (its reward minus the mean of
its scored siblings) is not stored: readers compute it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Block, Number, Record, Text

ChildStatus = Literal["pending", "running", "passed", "failed", "errored"]


class Fork(Block):
    """One fork: a snapshot and the children that start from it."""

    id: str = Field(description="The fork's id: fork-0 for the trial's own fork, fork-<label> for a nested "
                    "fork after child <label> ran.")
    parent_node: str | None = Field(None, description="The child whose state was snapshotted (nested fork); "
                                    "null for the trial's own fork.")
    at_prompt: int = Field(0, description="Parent prompts sent before the snapshot (0: before the first).")
    snapshot: str | None = Field(None, description="The snapshot's reference on its backend; null before it is "
                                 "taken.")
    snapshot_kept: bool = Field(False, description="The snapshot outlives the run (--retain-snapshots).")
    isolated: bool = Field(False, description="Each child ran in a sandbox of its own created from the "
                           "snapshot (else the one sandbox was restored between children).")
    children: list[str] = Field(default_factory=list, description="The ids of its children, in order.")
    session_id: str | None = Field(None, description="The agent's ACP session at the snapshot (what "
                                   "--resume-session children reload); null for agents without one.")
    status: str = Field("pending", description="pending, running, complete (every child finished), partial "
                        "(some child did not) or stopped (--stop-on-child-failure).")


class Node(Block):
    """One child of a fork."""

    id: str = Field(description="The child's id: its --child label (unique in the trial).")
    fork: str = Field(description="The fork it starts from.")
    path: str = Field(description="Its folder, relative to the trial folder.")
    prompt_source: str = Field(description="child (its own prompt), parent (the parent's remaining prompts) "
                               "or task (the task's prompts).")


class Checkpoint(Block):
    """An automatic checkpoint (--checkpoints): a snapshot after a parent prompt."""

    id: str = Field(description="prompt:N")
    snapshot: str | None = Field(None, description="The snapshot's reference, null once deleted.")
    kept: bool = Field(False, description="Still exists (within --checkpoint-keep and retained).")
    session_id: str | None = Field(None, description="The agent's ACP session at the checkpoint (what "
                                   "--retry-resume-session reloads); null for agents without one.")


class TreeRecord(Record):
    """``tree.json``: the forks and children of one branched trial."""

    kind: str = Field("benchflow.branch-tree", description="Always benchflow.branch-tree.")
    trial_name: str = Field(description="The trial folder name.")
    task_name: str = Field(description="The task's name.")
    agent: str | None = Field(None, description="The agent.")
    model: str | None = Field(None, description="The model; null for control agents.")
    sandbox: str | None = Field(None, description="The sandbox backend.")
    parent_prompts: list[str] = Field(default_factory=list, description="The parent's resolved prompts.")
    checkpoint_after_prompt: int = Field(0, description="Parent prompts sent before the trial's own fork.")
    parent_mode: str = Field("continue", description="continue (the parent is restored after the children, "
                             "sends its remaining prompts and is verified) or discard.")
    snapshot_layers: str = Field("sandbox", description="What each snapshot captures.")
    resume_session: bool = Field(False, description="Children resumed the parent's agent conversation.")
    from_checkpoint: str | None = Field(None, description="The trial folder this one branched again from.")
    forks: list[Fork] = Field(default_factory=list, description="Every fork, the trial's own first.")
    nodes: list[Node] = Field(default_factory=list, description="Every child, in the order they run.")
    checkpoints: list[Checkpoint] = Field(default_factory=list, description="Automatic checkpoints.")

    def fork(self, fork_id: str) -> Fork | None:
        return next((f for f in self.forks if f.id == fork_id), None)

    def node(self, node_id: str) -> Node | None:
        return next((n for n in self.nodes if n.id == node_id), None)


class Observation(Record):
    """``observation.json``: what one branch child was asked and how it ended."""

    kind: str = Field("benchflow.branch-observation", description="Always benchflow.branch-observation.")
    fork: str = Field(description="The fork the child starts from.")
    node: str = Field(description="The child's id (its label).")
    parent_node: str | None = Field(None, description="The child whose state the fork snapshotted, or null.")
    request: dict[str, Any] = Field(default_factory=dict, description="What the child was asked: prompts "
                                    "(resolved) and prompt_source.")
    status: ChildStatus = Field("pending", description="pending, running, passed (reward 1), failed (a lower "
                                "reward) or errored (no reward).")
    reward: Number = Field(None, description="The verifier's reward; null when unscored.")
    rewards: dict[str, Any] | None = Field(None, description="The verifier's whole verdict.")
    verifier_output: str | None = Field(None, description="The verifier's stdout, relative to the child folder.")
    verifier_error: Text = Field(None, description="Why the verifier gave no verdict, or null.")
    verifier_error_category: str | None = Field(None, description="The verifier error's category.")
    error: Text = Field(None, description="Why the child's agent side failed, or null.")
    error_category: str | None = Field(None, description="The error's category.")
    n_tool_calls: int | None = Field(None, description="Tool calls the child's agent made.")
    total_tokens: int | None = Field(None, description="Tokens the child's model calls used.")
    cost_usd: Number = Field(None, description="What the child's model calls cost, or null.")
    sandbox_seconds: Number = Field(None, description="Seconds from restore to the end of the verifier.")
    attempts: int = Field(0, description="How many times the child was started (--child-retries).")
    started_at: str | None = Field(None, description="Local start time, no zone.")
    finished_at: str | None = Field(None, description="Local finish time, no zone.")

    @property
    def is_finished(self) -> bool:
        """The resume rule: a reward or a verifier error; else a rerun runs the child again."""
        return self.reward is not None or bool(self.verifier_error)
