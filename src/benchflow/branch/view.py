"""Reading branched trials back: ``benchflow.branch-view/1`` documents (``bench eval branches``).

Reads only the job folder (``tree.json`` and each child's ``observation.json``
through :mod:`benchflow.records`). The advantage of a child is computed here:
its reward minus the mean reward of its scored siblings in the same fork
(null when it or all of its siblings are unscored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchflow.errors import UserError
from benchflow.jobs.layout import JobPaths, TrialPaths
from benchflow.records import Unreadable, read_json, read_record
from benchflow.records.branch import Observation

from .tree import TreeFile


class NotBranched(UserError):
    """``bench eval branches PATH`` where PATH holds no branched trial."""


def advantage(reward: float | None, siblings: list[float | None]) -> float | None:
    """``reward`` minus the mean of the siblings' rewards (unscored ones left out)."""
    scored = [r for r in siblings if r is not None]
    if reward is None or not scored:
        return None
    return round(reward - sum(scored) / len(scored), 6)


def branched_trials(path: Path) -> list[TrialPaths]:
    """The branched trial folders at ``path``: one trial folder, a job folder, or a folder of jobs
    (``--jobs-dir``: every job in it, by name).

    Raises:
        NotBranched: no tree.json there.
    """
    path = Path(path).expanduser()
    if (path / "tree.json").is_file():
        return [TrialPaths(path)]
    trials = _branched_in(path)
    if not trials and path.is_dir():
        for job in sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink()):
            trials.extend(_branched_in(job))
    if not trials:
        raise NotBranched(f"{path}: no branched trial here (no tree.json); give a job folder or a trial "
                          "folder of a bench branch run, or the folder of jobs that holds them")
    return trials


def _branched_in(job: Path) -> list[TrialPaths]:
    return [t for t in JobPaths(job).trials() if t.tree.is_file()] if job.is_dir() else []


def branch_view(trial: TrialPaths) -> dict[str, Any]:
    """One trial's forks and children with their request, status, reward, advantage and spend."""
    tree = TreeFile.load(trial)
    if tree is None:
        raise NotBranched(f"{trial.root}: no tree.json")
    record = tree.tree
    notes: list[str] = []
    observations: dict[str, Observation | None] = {}
    for node in record.nodes:
        try:
            observations[node.id] = read_record(Observation, trial.root / node.path / "observation.json",
                                                notes=notes)
        except Unreadable as exc:
            notes.append(str(exc))
            observations[node.id] = None
    forks = []
    for fork in record.forks:
        rewards = {n: (observations.get(n).reward if observations.get(n) else None) for n in fork.children}
        children = []
        for node_id in fork.children:
            node = record.node(node_id)
            obs = observations.get(node_id)
            siblings = [r for other, r in rewards.items() if other != node_id]
            children.append({
                "node": node_id, "path": node.path if node else None,
                "request": obs.request if obs else {"prompt_source": node.prompt_source if node else None},
                "status": obs.status if obs else "pending", "reward": obs.reward if obs else None,
                "advantage": advantage(obs.reward if obs else None, siblings),
                "error": (obs.error or obs.verifier_error) if obs else None,
                "error_category": (obs.error_category or obs.verifier_error_category) if obs else None,
                "total_tokens": obs.total_tokens if obs else None, "cost_usd": obs.cost_usd if obs else None,
                "sandbox_seconds": obs.sandbox_seconds if obs else None,
                "trajectory": f"{node.path}/trajectory/acp_trajectory.jsonl" if node else None})
        forks.append({"fork": fork.id, "parent_node": fork.parent_node, "at_prompt": fork.at_prompt,
                      "snapshot_kept": fork.snapshot_kept, "status": fork.status, "children": children})
    result = read_json(trial.result) or {}
    return {"kind": "benchflow.branch-view", "schema_version": 1, "schema_minor": 1,
            "trial_dir": str(trial.root), "trial_name": record.trial_name, "task_name": record.task_name,
            "agent": record.agent, "model": record.model, "sandbox": record.sandbox,
            "parent_mode": record.parent_mode, "checkpoint_after_prompt": record.checkpoint_after_prompt,
            "error": result.get("error"), "error_category": result.get("error_category"),
            "forks": forks, "checkpoints": [c.model_dump() for c in record.checkpoints], "notes": notes}


def branch_views(path: Path) -> list[dict[str, Any]]:
    return [branch_view(trial) for trial in branched_trials(path)]


def error_line(error: object, category: str | None) -> str:
    """A trial's error on one line: ``error (CATEGORY): message`` (the message's line breaks folded)."""
    return f"error ({category or 'other'}): {' '.join(str(error).split())}"


def _fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def render_view(view: dict[str, Any]) -> str:
    """One branched trial as text: a line per fork, a line per child (``bench eval branches``,
    ``bench eval inspect`` of a branched trial)."""
    lines = [f"{view['trial_name']}  task {view['task_name']}  agent {view['agent']}"]
    if view.get("error"):  # the trial's own failure (the parent's, or its sandbox's): why children are pending
        lines.append("  " + error_line(view["error"], view.get("error_category")))
    for fork in view["forks"]:
        after = f"after child {fork['parent_node']}" if fork["parent_node"] else f"after prompt {fork['at_prompt']}"
        lines.append(f"  {fork['fork']} ({after}, {fork['status']}{', snapshot kept' if fork['snapshot_kept'] else ''})")
        for c in fork["children"]:
            prompts = (c["request"] or {}).get("prompts") or []
            ask = (prompts[-1] if prompts else (c["request"] or {}).get("prompt_source") or "").replace("\n", " ")
            status = f"{c['status']} [{c['error_category']}]" if c.get("error_category") else c["status"]
            lines.append(f"    {c['node']:<16} {status:<8} reward {_fmt(c['reward']):<6} advantage "
                         f"{_fmt(c['advantage']):<7} tokens {_fmt(c['total_tokens']):<7} usd {_fmt(c['cost_usd']):<7} "
                         f"sandbox-s {_fmt(c['sandbox_seconds'])}  {ask[:60]}")
    return "\n".join(lines) + "\n"
