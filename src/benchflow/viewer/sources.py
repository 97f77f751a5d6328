"""What ``bench view ROLLOUT_DIR`` points at, and which folders under it may be served.

Which folder is a job or a trial is decided by ``benchflow.results`` (one
classification for every command). The browser names jobs and trials by their
path relative to the folder the user gave; :meth:`ViewSource.resolve` turns
such an id back into a path and refuses anything outside that folder, so a
page can never make the server read elsewhere on disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from benchflow.errors import UserError
from benchflow.results.reader import find_jobs, is_job_dir, is_trial_dir

Kind = Literal["trial", "job", "jobs", "trajectory"]


def is_trial(path: Path) -> bool:
    """A trial folder holds its own config.json / result.json, or (a bare session) a trajectory/ folder."""
    return path.is_dir() and (is_trial_dir(path) or (path / "trajectory").is_dir())


@dataclass(frozen=True)
class ViewSource:
    """The resolved ROLLOUT_DIR: its kind and its absolute root (symlinks resolved)."""

    kind: Kind
    root: Path

    @property
    def base(self) -> Path:
        """The folder ids are relative to (a trajectory file's own folder)."""
        return self.root.parent if self.kind == "trajectory" else self.root

    def ident(self, path: Path) -> str:
        """The id the browser uses for ``path``: its POSIX path relative to :attr:`base` ("." for the base).

        Raises:
            ValueError: ``path`` is not under :attr:`base`.
        """
        rel = Path(os.path.abspath(path)).relative_to(self.base)
        return rel.as_posix() or "."

    def resolve(self, ident: str) -> Path:
        """Turn an id back into its path; ``LookupError`` unless it exists inside the folder.

        "Inside" is checked on the real path (symlinks followed): under
        :attr:`base`, or under one of the listed jobs (a jobs folder may link to
        jobs kept elsewhere). A link to anywhere else is refused.
        """
        pure = PurePosixPath(ident or ".")
        if pure.is_absolute() or ".." in pure.parts:
            raise LookupError(ident)
        path = self.base.joinpath(*pure.parts)
        if not path.exists():
            raise LookupError(ident)
        real = path.resolve()
        if not _within(real, self.base) and not any(_within(real, job.resolve()) for job in self.jobs()):
            raise LookupError(ident)
        return path

    def jobs(self) -> list[Path]:
        """Every job this source shows (paths as found under :attr:`root`, links not resolved)."""
        if self.kind == "job":
            return [self.root]
        if self.kind == "jobs":
            return [Path(os.path.abspath(path)) for path in find_jobs(self.root)]
        return []


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def resolve_source(target: str) -> ViewSource:
    """Classify ROLLOUT_DIR; a path that is none of the four kinds is a ``UserError`` (exit 2)."""
    if target.startswith("hf://"):
        raise UserError(f"ROLLOUT_DIR {target}: an hf:// dataset is fetched by bench view "
                        "(benchflow.hf.view_source.fetch); pass its local folder here")
    path = Path(target).expanduser()
    if not path.exists():
        raise UserError(f"ROLLOUT_DIR {target}: no such file or folder; pass a trial folder, "
                        "a job folder, a folder of jobs or a trajectory .jsonl file")
    path = path.resolve()
    if path.is_file():
        if path.suffix != ".jsonl":
            raise UserError(f"ROLLOUT_DIR {target}: a file must be a trajectory .jsonl "
                            "(e.g. trajectory/acp_trajectory.jsonl); pass its trial folder otherwise")
        return ViewSource("trajectory", path)
    if is_trial(path):
        return ViewSource("trial", path)
    if is_job_dir(path):
        return ViewSource("job", path)
    if find_jobs(path):
        return ViewSource("jobs", path)
    raise UserError(f"ROLLOUT_DIR {target}: holds no trial, job or trajectory (no result.json, "
                    "config.json, summary.json or trajectory/ found); pass a folder `bench run` wrote")
