"""``bench eval list``: one row per job under a jobs folder, with its scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .job import load_job
from .reader import find_jobs, require_dir


class JobRow(BaseModel):
    name: str
    path: str
    agent: str | None = None
    model: str | None = None
    started_at: str | None = None
    running: bool = False
    trials: int
    denominators: dict[str, Any]
    notes: int = 0


class JobList(BaseModel):
    """``benchflow.job-list``: what ``bench eval list --json`` prints."""

    kind: str = "benchflow.job-list"
    schema_version: int = 1
    path: str
    jobs: list[JobRow] = Field(default_factory=list)


def list_jobs(jobs_dir: str | Path = "jobs") -> JobList:
    """Every job at or under ``jobs_dir``, newest name last (job names default to start times)."""
    root = require_dir(Path(jobs_dir), "a jobs folder (default ./jobs)")
    rows = []
    for job_dir in find_jobs(root):
        doc = load_job(job_dir)
        rows.append(JobRow(name=doc.name, path=doc.path, agent=doc.settings.get("agent"),
                           model=doc.settings.get("model"), started_at=doc.settings.get("started_at"),
                           running=doc.running, trials=len(doc.trials), denominators=doc.denominators,
                           notes=len(doc.notes)))
    return JobList(path=str(root), jobs=rows)
