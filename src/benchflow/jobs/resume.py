"""``bench eval resume JOB_DIR``: rebuild the RunSpec a job recorded in evaluation.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchflow.errors import JobFolderError
from benchflow.records import EvaluationRecord, Unreadable, read_record

from .layout import JobPaths
from .spec import RunSpec


def resume_spec(job_dir: Path, *, agent_env: dict[str, str], concurrency: int | None,
                restart_changed: bool) -> RunSpec:
    """The spec that finishes ``job_dir``.

    Raises:
        JobFolderError: not a job folder, or one without a readable evaluation.json.
    """
    job_dir = Path(job_dir).expanduser()
    if not job_dir.is_dir() or not JobPaths.is_job(job_dir):
        raise JobFolderError(f"{job_dir}: not a job folder (no evaluation.json, summary.json or trial folders)")
    try:
        evaluation = read_record(EvaluationRecord, JobPaths(job_dir).evaluation)
    except Unreadable:
        evaluation = None
    if evaluation is None or evaluation.run_config is None:
        raise JobFolderError(f"{job_dir}/evaluation.json: missing or unreadable; this job cannot be resumed "
                             "(rerun its original bench run command with --job-name instead)")
    data: dict[str, Any] = dict(evaluation.run_config)
    data["agent_env"] = {**(data.get("agent_env") or {}), **agent_env}
    data.update(jobs_dir=str(job_dir.parent), job_name=job_dir.name, fresh=False, restart_changed=restart_changed,
                trials=1, matrix=None)
    if concurrency is not None:
        data["concurrency"] = concurrency
    try:
        return RunSpec.model_validate(data)
    except ValidationError as exc:
        raise JobFolderError(f"{job_dir}/evaluation.json: run_config is not valid ({exc.errors()[0]['msg']})") from None
