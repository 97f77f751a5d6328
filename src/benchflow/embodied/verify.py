"""``bench embodied verify``: each embodied trial's files checked against its verdict, as they are now.

The verdict is the trial's reward (``result.json``) and the verifier's reward files; the evidence is the episode
record the verifier copied (``verifier/episode/``) and the copies it made in ``artifacts/``. A file changed,
replaced or lost after the run shows up as one of these checks failing:

  record            the record's result.json and episode.json exist and parse
  record_hash       episode.json's initial_state_sha256 is the hash of its initial_state, and result.json (and
                    BenchFlow 0.7's trainer/embodied_episode.json) name the same hash
  record_steps      result.json's return is the sum of steps.jsonl's rewards, its steps_used the last step's count
  video             the video video_index.json names is in the record
  video_copy        artifacts/recording.mp4 is there and is the record's video, byte for byte
  observation_copy  each camera image in artifacts/observations/ is the record's image of that name
  reward            the trial's reward, reward.txt / reward.json and reward-details.json say what the record
                    judged: 1 when result.json's success is true, else 0

A trial without ``verifier/episode/`` is not embodied and is skipped.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import JobFolderError
from benchflow.jobs.layout import TrialPaths
from benchflow.results import TrialSummary
from benchflow.results.job import read_trials
from benchflow.util import nofollow
from benchflow.verify.rewards import RewardError, parse_reward_files

from .record import Episode, file_sha256, plain_name, read_episode, read_object, read_steps, state_sha256

KIND = "benchflow.embodied-verify"
SCHEMA_VERSION = 1
TOLERANCE = 1e-6
"""The episode server rounds the return to 6 decimals."""


@dataclass
class Problem:
    check: str
    detail: str


@dataclass
class TrialCheck:
    trial: str
    path: str
    task: str
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def fail(self, check: str, detail: str) -> None:
        self.problems.append(Problem(check, detail))


@dataclass
class VerifyReport:
    path: str
    trials: list[TrialCheck]
    skipped: int
    notes: list[str]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.trials)

    def document(self) -> dict[str, Any]:
        return {"kind": KIND, "schema_version": SCHEMA_VERSION, "path": self.path, "ok": self.ok,
                "checked": len(self.trials), "failed": sum(1 for t in self.trials if not t.ok),
                "skipped": self.skipped, "notes": self.notes,
                "trials": [{"trial": t.trial, "path": t.path, "task": t.task, "ok": t.ok,
                            "problems": [{"check": p.check, "detail": p.detail} for p in t.problems]}
                           for t in self.trials]}


def _short(digest: str) -> str:
    return f"{digest[:12]}…" if len(digest) > 12 else digest


def _check_hashes(trial: TrialPaths, episode: Episode, check: TrialCheck) -> None:
    header, result = episode.header or {}, episode.result or {}
    recorded = header.get("initial_state_sha256")
    if "initial_state" in header and isinstance(recorded, str):
        actual = state_sha256(header["initial_state"])
        if actual != recorded:
            check.fail("record_hash", f"episode.json's initial_state hashes to {_short(actual)}, "
                                      f"not the {_short(recorded)} it records")
    copies = [("result.json", result.get("initial_state_sha256"))]
    trainer, problem = read_object(trial.trainer_episode)
    if problem:
        check.fail("record", problem)
    elif trainer is not None:
        copies.append(("trainer/embodied_episode.json", trainer.get("initial_state_sha256")))
    for where, value in copies:
        if isinstance(recorded, str) and isinstance(value, str) and value != recorded:
            check.fail("record_hash", f"{where} names initial state {_short(value)}, episode.json {_short(recorded)}")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _check_steps(episode: Episode, check: TrialCheck) -> None:
    result = episode.result or {}
    if not os.path.lexists(episode.paths.steps):
        return
    total, last_step, lines = 0.0, None, 0
    try:
        for line in read_steps(episode.paths.steps):
            total += _number(line.get("reward")) or 0.0
            last_step = line.get("step", last_step)
            lines += 1
    except OSError as exc:
        check.fail("record", f"{episode.paths.steps}: cannot be read ({exc.strerror or exc})")
        return
    recorded = _number(result.get("return"))
    if recorded is not None and not math.isclose(recorded, total, abs_tol=TOLERANCE):
        check.fail("record_steps", f"result.json's return is {recorded:g}, steps.jsonl's rewards sum to {total:g}")
    steps_used = result.get("steps_used")
    if lines and isinstance(steps_used, int) and isinstance(last_step, int) and steps_used != last_step:
        check.fail("record_steps", f"result.json's steps_used is {steps_used}, steps.jsonl ends at step {last_step}")


def _check_video(trial: TrialPaths, episode: Episode, check: TrialCheck) -> None:
    index, problem = read_object(episode.paths.video_index)
    if problem:
        check.fail("record", problem)
    name = (index or {}).get("video")
    if name is not None and not plain_name(name):
        check.fail("video", f"video_index.json names {name!r}, not a file of verifier/episode/")
        return
    video = episode.paths.video(name or "recording.mp4")
    if name and not nofollow.is_regular(video):
        check.fail("video", f"video_index.json names {name}, which is not in verifier/episode/")
        return
    if not os.path.lexists(video):
        return  # an episode recorded without video (no imageio in the simulator)
    if not os.path.lexists(trial.video_copy):
        check.fail("video_copy", f"artifacts/{trial.video_copy.name} is missing (the record has {video.name})")
        return
    try:
        same = file_sha256(video) == file_sha256(trial.video_copy)
    except OSError as exc:
        check.fail("video_copy", f"{exc.filename or trial.video_copy} cannot be read ({exc.strerror or exc})")
        return
    if not same:
        check.fail("video_copy", f"artifacts/{trial.video_copy.name} differs from verifier/episode/{video.name}")


def _check_observations(trial: TrialPaths, episode: Episode, check: TrialCheck) -> None:
    folder = trial.observation_copies
    if not folder.is_dir() or folder.is_symlink():
        return
    for copy in sorted(folder.iterdir()):
        original = episode.paths.observations / copy.name
        if not original.is_file():
            check.fail("observation_copy", f"artifacts/observations/{copy.name} is not in the record")
            continue
        try:
            same = file_sha256(original) == file_sha256(copy)
        except OSError as exc:
            check.fail("observation_copy", f"{copy.name}: cannot be read ({exc.strerror or exc})")
            continue
        if not same:
            check.fail("observation_copy", f"artifacts/observations/{copy.name} differs from the record's")


def _check_reward(trial: TrialPaths, summary: TrialSummary, episode: Episode, check: TrialCheck) -> None:
    success = (episode.result or {}).get("success")
    if not isinstance(success, bool):
        return
    judged = 1.0 if success else 0.0
    said = f"the record judged success={str(success).lower()} (reward {judged:g})"
    if summary.reward is None:
        check.fail("reward", f"result.json has no reward, but {said}")
    elif not math.isclose(summary.reward, judged, abs_tol=1e-9):
        check.fail("reward", f"result.json's reward is {summary.reward:g}, but {said}")
    try:
        files = parse_reward_files(trial.verifier_dir)
    except RewardError as exc:
        check.fail("reward", f"verifier/{exc}")
        files = None
    if files is not None and not math.isclose(float(files["reward"]), judged, abs_tol=1e-9):
        check.fail("reward", f"verifier/reward.txt/reward.json say {files['reward']:g}, but {said}")
    details, problem = read_object(trial.reward_details)
    if problem:
        check.fail("reward", problem)
    value = _number((details or {}).get("reward"))
    if value is not None and not math.isclose(value, judged, abs_tol=1e-9):
        check.fail("reward", f"verifier/reward-details.json says {value:g}, but {said}")


def verify_trial(summary: TrialSummary) -> TrialCheck | None:
    """The checks of one finished trial; ``None`` for a trial that is not embodied."""
    trial = TrialPaths(Path(summary.path))
    episode = read_episode(trial)
    if episode is None:
        return None
    check = TrialCheck(trial=summary.name, path=summary.path, task=summary.task_name)
    for problem in episode.problems:
        check.fail("record", problem)
    if episode.paths.root.is_symlink():
        return check  # nothing behind the link is the verifier's
    for path, record in ((episode.paths.result, episode.result), (episode.paths.header, episode.header)):
        if record is None and not os.path.lexists(path):
            check.fail("record", f"verifier/episode/{path.name} is missing")
    _check_hashes(trial, episode, check)
    _check_steps(episode, check)
    _check_video(trial, episode, check)
    _check_observations(trial, episode, check)
    _check_reward(trial, summary, episode, check)
    return check


def verify_path(path: Path) -> VerifyReport:
    """Check every finished embodied trial of a job folder, a trial folder or a glob of them.

    Raises:
        JobFolderError: ``path`` holds no job, or no trial with an episode record.
    """
    notes: list[str] = []
    trials, _, _, _ = read_trials(path, notes)
    checked: list[TrialCheck] = []
    skipped = 0
    for summary in trials:
        result = verify_trial(summary) if summary.finished else None
        if result is None:
            skipped += 1
        else:
            checked.append(result)
    if not checked:
        raise JobFolderError(f"{path}: no embodied trials (no finished trial has verifier/episode/); "
                             "give a job of embodied tasks")
    return VerifyReport(path=str(path), trials=checked, skipped=skipped, notes=notes)
