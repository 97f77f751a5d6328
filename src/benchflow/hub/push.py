"""``bench hub push``: a finished run, redacted, to a hub (linked to a dataset version when it ran one).

The run is bundled exactly as ``bench bundle`` does (every text file redacted,
``bundle.json`` listing what was masked), without the saved workspaces, and
sent in one request; the hub validates every trial record against the shipped
JSON Schemas and the dataset's task digests before it keeps anything.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from benchflow.errors import JobFolderError

from .client import HubClient
from .names import NAME_SHAPE


def job_folder(path: Path) -> Path:
    """The one job JOB_DIR names: a job folder, or a jobs folder holding exactly one job.

    Raises:
        JobFolderError: not a job, or several jobs (name one) (exit 2).
    """
    from benchflow.results.reader import find_jobs, is_job_dir, require_dir

    require_dir(path, "a job folder")
    if is_job_dir(path):
        return path
    jobs = find_jobs(path)
    if len(jobs) == 1:
        return jobs[0]
    if not jobs:
        raise JobFolderError(f"{path}: not a job folder (no trials with result.json); give the folder bench run wrote")
    raise JobFolderError(f"{path}: holds {len(jobs)} jobs; push one of them, e.g. {jobs[-1]}")


def recorded_dataset(job: Path) -> str | None:
    """``org/name@version`` the job recorded (summary.json, else a trial's config.json), if any.

    A dataset of a plain registry (``name@version``, no org) is not a hub's, so it is not linked."""
    candidates = [job / "summary.json", *sorted(job.glob("*/config.json"))[:1]]
    for path in candidates:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("dataset_name") and doc.get("dataset_version"):
            spec = f"{doc['dataset_name']}@{doc['dataset_version']}"
            return spec if NAME_SHAPE.match(spec) else None
    return None


def push(client: HubClient, job_dir: Path, dataset: str | None, label: str | None) -> dict[str, Any]:
    """Bundle and push; returns the hub's answer (run id, url, leaderboard entries).

    Raises:
        JobFolderError: JOB_DIR is not one job.
        HubRefused: the hub refused the run (schema error, digest mismatch, bad token).
    """
    from benchflow.results.bundle import bundle

    job = job_folder(job_dir.resolve())
    params = {key: value for key, value in (("dataset", dataset or recorded_dataset(job)), ("label", label))
              if value}
    with tempfile.TemporaryDirectory(prefix="bench-push-") as tmp:
        zip_path = Path(tmp) / f"{job.name}.zip"
        bundle(job, zip_path, workspace=False)
        return client.upload("POST", "/api/runs", zip_path, params=params).json()
