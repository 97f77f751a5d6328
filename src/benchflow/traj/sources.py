"""Which trajectory files ``bench traj upload PATH`` means.

PATH is a ``.jsonl`` file, a trial folder (its ``trajectory/*.jsonl``), or
any folder (every ``.jsonl`` below it, at most :data:`MAX_FILES`). Links are
not followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import UserError
from benchflow.jobs.layout import TrialPaths

MAX_FILES = 200


@dataclass(frozen=True)
class Source:
    path: Path
    name: str
    """Its name in the capture (``trajectory/<name>``): relative to PATH, or the file name."""


def find_sources(path: Path) -> list[Source]:
    """The JSONL files of PATH, in name order.

    Raises:
        UserError: PATH is missing, not JSONL, or holds none (exit 2).
    """
    if path.is_symlink() or not path.exists():
        raise UserError(f"{path}: no such file or folder; give a trajectory .jsonl file, a folder or a trial folder")
    if path.is_file():
        if path.suffix != ".jsonl":
            raise UserError(f"{path}: not a trajectory .jsonl file; give a .jsonl file, a folder or a trial folder")
        return [Source(path, path.name)]
    trial = TrialPaths(path)
    root = trial.trajectory_dir if trial.result.is_file() and trial.trajectory_dir.is_dir() else path
    found = sorted(p for p in root.rglob("*.jsonl") if p.is_file() and not p.is_symlink())
    if not found:
        raise UserError(f"{path}: holds no trajectory .jsonl file")
    if len(found) > MAX_FILES:
        raise UserError(f"{path}: holds {len(found)} .jsonl files (more than {MAX_FILES}); give one trial or file")
    return [Source(p, p.relative_to(root).as_posix()) for p in found]
