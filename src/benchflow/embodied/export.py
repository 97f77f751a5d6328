"""``bench embodied export``: every trial's per-step transitions and the episode index, for training.

Written into ``OUT`` (the trial folders are only read), in BenchFlow 0.7's row formats:

  steps.jsonl     one row per simulator step of every episode: episode_id (the trial folder's name), index, step,
                  t, op (act / skill:<name> / settle), obs (the state before the step, only the visible fields in
                  vision mode), action (by group), reward, success, done, truncated, and role, frame, info when
                  the step has them; the last row of an episode also has final_obs. The next observation of a
                  row is the next row's obs. Settle rows (the hold after ``robo done``) are kept and marked.
  episodes.jsonl  one row per episode: trial, episode_id, task, source_task, seed, backend, embodiment,
                  observation_mode, visible_fields, success_mode, initial_state_sha256, n_steps, return, reward
                  (the trial's), success, outcome, steps_used, video_index (its video relative to the job folder)

Every finished trial with ``verifier/episode/steps.jsonl`` and ``episode.json`` is an episode (retries too: each
is an episode the policy ran). Both files are written whole or not at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import JobFolderError
from benchflow.jobs.layout import TrialPaths
from benchflow.results.job import read_trials
from benchflow.util import atomic

from .record import plain_name, read_episode, read_object, read_steps

STEPS = "steps.jsonl"
EPISODES = "episodes.jsonl"
TRUNCATED_OUTCOMES = frozenset({"budget_exhausted", "wall_time_exhausted", "agent_exited"})
"""Endings that cut an episode short (a time limit, not a terminal state)."""


@dataclass(frozen=True)
class Exported:
    episodes: int
    steps: int
    out: Path
    notes: list[str]


def _visible(header: dict[str, Any]):
    """What the agent could see of a state: everything, or only ``visible_fields`` in vision mode."""
    if header.get("observation_mode") != "vision":
        return lambda state: state
    fields = set(header.get("visible_fields") or [])
    return lambda state: {k: v for k, v in state.items() if k in fields} if isinstance(state, dict) else state


def _episode_lines(trial: TrialPaths, header: dict[str, Any], result: dict[str, Any]) -> tuple[bytes, list[float]]:
    """The episode's rows as JSON lines, and the rewards of its steps. Raises OSError."""
    view = _visible(header)
    obs = view(header.get("initial_state"))
    rows: list[dict[str, Any]] = []
    rewards: list[float] = []
    for line in read_steps(trial.episode.steps):
        reward = line.get("reward", 0.0)
        row: dict[str, Any] = {
            "episode_id": trial.name, "index": line.get("i", len(rows)), "step": line.get("step"),
            "t": line.get("t"), "op": line.get("op"), "obs": obs, "action": line.get("action"), "reward": reward,
            "success": bool(line.get("success")), "done": False, "truncated": False,
        }
        row.update({key: line[key] for key in ("role", "frame", "info") if key in line})
        rows.append(row)
        rewards.append(float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else 0.0)
        if "state" in line:
            obs = view(line["state"])
    if rows:
        rows[-1].update(done=True, truncated=result.get("outcome") in TRUNCATED_OUTCOMES, final_obs=obs)
    return "".join(json.dumps(row) + "\n" for row in rows).encode(), rewards


def _video_index(trial: TrialPaths, notes: list[str]) -> dict[str, Any]:
    index, problem = read_object(trial.episode.video_index)
    if problem:
        notes.append(problem)
    index = dict(index or {})
    name = index.get("video")
    if plain_name(name):
        index["video"] = trial.episode.video(name).relative_to(trial.root.parent).as_posix()
    elif name is not None:
        notes.append(f"{trial.episode.video_index}: names {name!r}, not a file of the record; video left out")
        index["video"] = None
    return index


def _episode_row(trial: TrialPaths, task: str, reward: float | None, header: dict[str, Any],
                 result: dict[str, Any], rewards: list[float], notes: list[str]) -> dict[str, Any]:
    success = result.get("success")
    return {
        "trial": trial.name, "episode_id": trial.name, "task": task, "source_task": header.get("task"),
        "seed": header.get("seed", result.get("seed")), "backend": header.get("backend"),
        "embodiment": header.get("embodiment"), "observation_mode": header.get("observation_mode"),
        "visible_fields": header.get("visible_fields"), "success_mode": header.get("success_mode"),
        "initial_state_sha256": header.get("initial_state_sha256"), "n_steps": len(rewards),
        "return": round(sum(rewards), 6),
        "reward": reward if reward is not None else (1.0 if success else 0.0),
        "success": success, "outcome": result.get("outcome"), "steps_used": result.get("steps_used"),
        "video_index": _video_index(trial, notes),
    }


def export_job(path: Path, out: Path) -> Exported:
    """Write ``out/steps.jsonl`` and ``out/episodes.jsonl`` for every embodied trial under ``path``.

    Raises:
        JobFolderError: ``path`` holds no job, or no trial with an episode record (nothing is written).
    """
    notes: list[str] = []
    trials, _, _, _ = read_trials(path, notes)
    rows: list[dict[str, Any]] = []
    n_steps = 0
    with atomic.open_for_write(out / STEPS) as sink:
        for summary in trials:
            trial = TrialPaths(Path(summary.path))
            episode = read_episode(trial)
            if episode is None or not summary.finished:
                continue
            notes += episode.problems
            if episode.header is None or not episode.paths.steps.is_file():
                notes.append(f"{trial.name}: its episode record has no episode.json or steps.jsonl; left out")
                continue
            try:
                lines, rewards = _episode_lines(trial, episode.header, episode.result or {})
            except OSError as exc:
                notes.append(f"{episode.paths.steps}: cannot be read ({exc.strerror or exc}); left out")
                continue
            sink.write(lines)
            n_steps += len(rewards)
            rows.append(_episode_row(trial, summary.task_name, summary.reward, episode.header, episode.result or {},
                                     rewards, notes))
        if not rows:
            raise JobFolderError(f"{path}: no embodied episodes (no finished trial has verifier/episode/ with "
                                 "episode.json and steps.jsonl); give a job of embodied tasks")
    atomic.write_jsonl(out / EPISODES, rows)
    return Exported(episodes=len(rows), steps=n_steps, out=out, notes=notes)
