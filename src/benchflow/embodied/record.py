"""One trial's embodied episode record, read back.

The episode server writes the record; the task's verifier copies it into ``verifier/episode/`` (see
:class:`benchflow.jobs.layout.EpisodePaths`). BenchFlow 0.7's embodied tasks and Robo Use's write the same files:

  result.json   success, outcome, seed, steps_used, max_steps, return, success_ever, initial_state_sha256, ...
  episode.json  task, seed, backend, embodiment, observation_mode, visible_fields, initial_state,
                initial_state_sha256
  steps.jsonl   per simulator step: i, step, t, op, role, action, reward, success, info, state, frame

Every file is read without following links (a job folder holds what sandboxes wrote) and a record that cannot
be read is a problem in words, never an exception.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import EpisodePaths, TrialPaths
from benchflow.records import Unreadable, read_json
from benchflow.util import nofollow

SEED_SEP = "--seed-"
"""A seeded variant of an embodied task is named ``<task>--seed-<n>`` (BenchFlow 0.7's task formats)."""
MODES = ("sim", "real", "hil-mock")


def split_seed_name(name: str) -> tuple[str, int | None]:
    """``metaworld-reach--seed-3`` -> (``metaworld-reach``, 3); a name without the suffix -> (name, None)."""
    base, sep, tail = name.rpartition(SEED_SEP)
    if sep and base and tail.isdigit():
        return base, int(tail)
    return name, None


def state_sha256(state: Any) -> str:
    """The episode server's hash of a state: SHA-256 of its JSON with sorted keys (``json.dumps`` defaults)."""
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, read without following a link. Raises OSError."""
    with nofollow.open_file(path) as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_steps(path: Path) -> Iterator[dict[str, Any]]:
    """The lines of ``steps.jsonl``; a torn last line (the server killed mid-write) ends the file. Raises OSError."""
    with nofollow.open_file(path) as handle:
        for raw in handle:
            line = raw.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                return
            if isinstance(row, dict):
                yield row


@dataclass
class Episode:
    """What a trial's ``verifier/episode/`` holds; ``None`` for a file that is missing or unreadable."""

    paths: EpisodePaths
    result: dict[str, Any] | None = None
    header: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    """Files of the record that exist but cannot be read, in words."""

    @property
    def seed(self) -> int | None:
        for record in (self.result, self.header):
            value = (record or {}).get("seed")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    @property
    def initial_state_sha256(self) -> str | None:
        for record in (self.result, self.header):
            value = (record or {}).get("initial_state_sha256")
            if isinstance(value, str) and value:
                return value
        return None

    @property
    def mode(self) -> str:
        """sim, real or hil-mock: the record's ``embodiment_mode``, else its embodiment's ``mode``, else sim."""
        embodiment = (self.header or {}).get("embodiment")
        for value in ((self.result or {}).get("embodiment_mode"), (self.result or {}).get("mode"),
                      embodiment.get("mode") if isinstance(embodiment, dict) else None):
            if value in MODES:
                return value
        return "sim"


def _object(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        data = read_json(path)
    except Unreadable as exc:
        problems.append(str(exc))
        return None
    if data is not None and not isinstance(data, dict):
        problems.append(f"{path}: not a JSON object")
        return None
    return data


def plain_name(name: Any) -> bool:
    """A file name of the record itself (``recording.mp4``), not a path that leads elsewhere."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name


def read_episode(trial: TrialPaths) -> Episode | None:
    """The trial's episode record, or ``None`` for a trial without ``verifier/episode/`` (not embodied)."""
    paths = trial.episode
    if paths.root.is_symlink():
        return Episode(paths, problems=[f"{paths.root}: a link, not the verifier's folder; not followed"])
    if not paths.root.is_dir():
        return None
    episode = Episode(paths)
    episode.result = _object(paths.result, episode.problems)
    episode.header = _object(paths.header, episode.problems)
    return episode


def read_object(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the JSON object at ``path`` or None when missing, the problem in words when it cannot be read)."""
    problems: list[str] = []
    data = _object(path, problems)
    return data, (problems[0] if problems else None)
