"""``bench eval continue-batch``: every timed-out trial under a folder tree, not yet continued.

A candidate is a trial folder (``config.json`` + ``trajectory/llm_trajectory.jsonl``) whose
``result.json`` ends in ``timeout`` or ``idle_timeout``. Trial folders are not searched further
(their steps and branch children are parts of them); hidden folders (``.set-aside``) are left out.
A trial whose output job already holds a finished continuation of it is left out too, so running
the batch again only picks up what is left.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.records import Unreadable, read_json

from .plan import output_job
from .source import ended_in_timeout, is_candidate


@dataclass
class Found:
    """What a search found: the trials to continue, and those left out with why."""

    trials: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def find_timed_out(root: Path, *, output: Path | None = None, limit: int | None = None) -> Found:
    """The timed-out trial folders at or under ``root``, sorted; at most ``limit`` of them."""
    found = Found()
    for folder in _trial_folders(Path(root).expanduser().resolve()):
        if not ended_in_timeout(folder):
            continue
        done = continued_in(folder, output)
        if done is not None:
            found.skipped.append((folder, f"already continued in {done}"))
            continue
        found.trials.append(folder)
        if limit is not None and len(found.trials) >= limit:
            break
    return found


def _trial_folders(root: Path) -> list[Path]:
    folders: list[Path] = []
    for here, dirs, _files in os.walk(root):
        path = Path(here)
        if is_candidate(path):
            folders.append(path)
            dirs.clear()  # a trial's steps and branch children belong to it
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(folders)


def continued_in(trial: Path, output: Path | None) -> Path | None:
    """The finished continuation of ``trial`` in its output job, if one exists."""
    for candidate in output_job(trial, output).trials():
        try:
            result = read_json(candidate.result)
        except Unreadable:
            continue
        continued = result.get("continued") if isinstance(result, dict) else None
        if isinstance(continued, dict) and continued.get("from_trial") == str(trial) \
                and ((result.get("rewards") or {}).get("reward") is not None or result.get("verifier_error")):
            return candidate.root
    return None
