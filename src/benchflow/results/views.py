"""What ``bench results`` and ``bench eval inspect`` read for a path: one entry point each.

The CLI renders whichever document comes back; the Python API returns it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from benchflow.errors import JobFolderError, UserError

from . import trajectory
from .compare import compare
from .documents import Comparison, JobDocument, TrialDocument
from .job import load_job
from .listing import JobList, list_jobs
from .reader import is_job_dir, is_trial_dir
from .trial import load_trial


def inspect_path(path: str | Path, *, attempts: str = "best", include_controls: bool = False,
                 by: str | None = None, trajectories: bool = False, verifier: bool = True,
                 ) -> JobDocument | TrialDocument:
    """A trial folder reads as ``benchflow.trial``; a job, results.jsonl or glob as ``benchflow.job``."""
    target = Path(path)
    if target.is_dir() and is_trial_dir(target):
        return load_trial(target, verifier=verifier, trajectories=trajectories)
    doc = load_job(target, attempts=attempts, include_controls=include_controls, by=by)
    if trajectories:
        doc.trajectories = {t.name: {"acp": trajectory.read_all(t.path, "acp"),
                                     "llm": trajectory.read_all(t.path, "llm")}
                            for t in doc.trials if Path(t.path).is_dir()}
    return doc


def results_for(jobs: Iterable[str | Path], *, attempts: str = "best", include_controls: bool = False,
                by: str | None = None) -> JobList | JobDocument | TrialDocument | Comparison:
    """``bench results``: none or a folder of jobs lists them; one job reads it; two compare them."""
    jobs = list(jobs)
    paths = [Path(p) for p in jobs] or [Path("jobs")]
    if len(paths) > 2:
        raise UserError(f"bench results takes at most two jobs (got {len(paths)}); "
                        "use `bench eval metrics FOLDER` to pool more")
    if len(paths) == 2:
        return compare(paths[0], paths[1], by=by, include_controls=include_controls, attempts=attempts)
    path = paths[0]
    if not jobs and not path.exists():
        raise JobFolderError("jobs: no such folder here; give a job folder or a folder of jobs "
                             "(bench results PATH), or run from where ./jobs is")
    if path.is_dir() and not is_job_dir(path) and not is_trial_dir(path):
        return list_jobs(path)
    return inspect_path(path, attempts=attempts, include_controls=include_controls, by=by)
