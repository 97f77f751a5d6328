"""Building and keeping ``tree.json`` and the children's ``observation.json`` (written atomically).

The tree is laid out before anything runs (every fork and child, children
``pending``), so a killed run leaves a tree a rerun can finish: it runs the
children whose observation is not finished (:attr:`Observation.is_finished`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.records import read_record
from benchflow.records.branch import Fork, Node, Observation, TreeRecord
from benchflow.util import atomic

from .spec import BranchSpec, ChildSpec

ROOT_FORK = "fork-0"


def fork_id(parent_node: str | None) -> str:
    return ROOT_FORK if parent_node is None else f"fork-{parent_node}"


def child_paths(trial: TrialPaths, fork: str, node: str) -> "ChildPaths":
    return ChildPaths(trial.branch_child(fork, node).root, trial=trial.name, node=node)


@dataclass(frozen=True)
class ChildPaths(TrialPaths):
    """A child's folder, laid out like a trial's; its ``name`` (the model gateway's route, the trial
    name in its records) is ``<trial>.<node>``, unique in the job."""

    trial: str = ""
    node: str = ""

    @property
    def name(self) -> str:
        return f"{self.trial}.{self.node}"


def new_tree(spec: BranchSpec, *, trial: str, task: str, sandbox: str, prompts: list[str]) -> TreeRecord:
    """Every fork and child of the request, nothing run yet."""
    forks: dict[str | None, Fork] = {}
    nodes = []
    for child in spec.children:
        fork = forks.get(child.parent)
        if fork is None:
            fork = forks[child.parent] = Fork(id=fork_id(child.parent), parent_node=child.parent,
                                              at_prompt=spec.at_prompt if child.parent is None else 0,
                                              isolated=spec.isolated or child.parent is not None)
        fork.children.append(child.label)
        nodes.append(Node(id=child.label, fork=fork.id, path=f"branches/{fork.id}/children/{child.label}",
                          prompt_source=prompt_source(child, spec.at_prompt, len(prompts))))
    return TreeRecord(trial_name=trial, task_name=task, agent=spec.agent, model=spec.model, sandbox=sandbox,
                      parent_prompts=prompts, checkpoint_after_prompt=spec.at_prompt, parent_mode=spec.parent,
                      snapshot_layers=spec.snapshot_layers, resume_session=spec.resume_session,
                      from_checkpoint=spec.from_checkpoint,
                      forks=[forks[None], *[f for k, f in forks.items() if k is not None]], nodes=nodes)


def prompt_source(child: ChildSpec, at_prompt: int, n_prompts: int) -> str:
    if child.prompt is not None:
        return "child"
    return "parent" if at_prompt < n_prompts else "task"


def child_prompts(child: ChildSpec, at_prompt: int, parent_prompts: list[str], task_prompts: list[str]) -> list[str]:
    """The child's own prompt; else the parent's remaining prompts; else (checkpoint after the last)
    the task's prompts."""
    if child.prompt is not None:
        from benchflow.jobs.prompts import INSTRUCTION_REF

        return [task_prompts[0] if child.prompt.strip() == INSTRUCTION_REF else child.prompt]
    rest = parent_prompts[at_prompt:]
    return rest or list(task_prompts)


class TreeFile:
    """The ``tree.json`` of one trial, rewritten after every change."""

    def __init__(self, paths: TrialPaths, tree: TreeRecord) -> None:
        self.paths = paths
        self.tree = tree

    @classmethod
    def load(cls, paths: TrialPaths) -> "TreeFile | None":
        tree = read_record(TreeRecord, paths.tree)
        return None if tree is None else cls(paths, tree)

    def save(self) -> None:
        atomic.write_json(self.paths.tree, self.tree.to_json())

    def set_fork(self, fork: str, **values: Any) -> None:
        found = self.tree.fork(fork)
        assert found is not None, fork
        for key, value in values.items():
            setattr(found, key, value)
        self.save()

    def observation(self, node: str) -> Observation | None:
        entry = self.tree.node(node)
        assert entry is not None, node
        return read_record(Observation, self.paths.root / entry.path / "observation.json")

    def finished(self, node: str) -> bool:
        obs = self.observation(node)
        return obs is not None and obs.is_finished

    def subtree_finished(self, node: str) -> bool:
        """The node and every node forked after it are finished."""
        if not self.finished(node):
            return False
        nested = self.tree.fork(fork_id(node))
        return nested is None or all(self.subtree_finished(n) for n in nested.children)

    def fork_done(self, fork: str) -> bool:
        found = self.tree.fork(fork)
        return found is not None and all(self.subtree_finished(n) for n in found.children)


def now() -> str:
    return str(dt.datetime.now())


def write_observation(paths: TrialPaths, obs: Observation) -> None:
    atomic.write_json(paths.observation, obs.to_json())


def observe(result: dict[str, Any], base: Observation, seconds: float) -> Observation:
    """The finished child's observation from its result document (``record_phase``)."""
    rewards = result.get("rewards") or None
    reward = rewards.get("reward") if rewards else None
    agent = result.get("agent_result") or {}
    status = "errored" if reward is None else ("passed" if reward >= 1.0 else "failed")
    stdout = "verifier/test-stdout.txt"
    return base.model_copy(update={
        "status": status, "reward": reward, "rewards": rewards, "verifier_output": stdout,
        "verifier_error": result.get("verifier_error"),
        "verifier_error_category": result.get("verifier_error_category"),
        "error": result.get("error"), "error_category": result.get("error_category"),
        "n_tool_calls": agent.get("n_tool_calls"), "total_tokens": agent.get("total_tokens"),
        "cost_usd": agent.get("cost_usd"), "sandbox_seconds": round(seconds, 3), "finished_at": now()})
