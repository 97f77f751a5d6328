"""``--trials N`` and ``--matrix``: one job per repeat, each under its own folder.

``--trials N`` writes ``<jobs>/<agent>/trial-NN/<job>``; ``--matrix`` runs every
alias × repeat into ``<jobs>/<alias>/trial-NN/`` and writes
``<jobs>/matrix-summary.json``. Each repeat writes its trainer outputs (``--health-summary-out``,
``--canonical-selection-out``, ``--canonical-jobs-dir``) under ``<alias>/trial-NN`` of the path given.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError
from benchflow.records import JobSummary, Unreadable, read_record
from benchflow.util import atomic

from .job import latest_job
from .layout import JobPaths, matrix_summary
from .spec import RunSpec


def load_matrix(path: str) -> dict[str, dict[str, Any]]:
    """Alias -> {model, agent, agent_env} from a matrix YAML.

    Raises:
        ConfigError: unreadable, or ``models:`` missing or malformed.
    """
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the matrix ({exc})") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict) or not models:
        raise ConfigError(f"{path}: needs a 'models:' mapping of alias -> model or {{model, agent, agent_env}}")
    out = {}
    for alias, entry in models.items():
        if isinstance(entry, str):
            entry = {"model": entry}
        if not isinstance(entry, dict) or not set(entry) <= {"model", "agent", "agent_env"}:
            raise ConfigError(f"{path}: models.{alias}: give a model string or {{model, agent, agent_env}}")
        if "model" not in entry and "agent" not in entry:
            raise ConfigError(f"{path}: models.{alias}: needs a model (or agent: oracle for a control)")
        out[str(alias)] = entry
    return out


def run_repeats(spec: RunSpec, run_one: Callable[[RunSpec], int]) -> int:
    """Run every repeat (and matrix alias); returns the worst exit code."""
    root = Path(spec.jobs_dir)
    entries = load_matrix(spec.matrix) if spec.matrix else {spec.agent: {}}
    code = 0
    runs = []
    for alias, entry in entries.items():
        for n in range(1, spec.trials + 1):
            folder = root / alias / f"trial-{n:02d}"
            update: dict[str, Any] = {"jobs_dir": str(folder), "trials": 1, "matrix": None,
                                      **_repeat_outputs(spec, alias, n)}
            if "agent" in entry:
                update["agent"] = entry["agent"]
            if "model" in entry:
                update["model"] = entry["model"]
            if entry.get("agent_env"):
                update["agent_env"] = {**spec.agent_env, **{k: str(v) for k, v in entry["agent_env"].items()}}
            code = max(code, run_one(spec.model_copy(update=update)))
            job = latest_job(folder)
            summary = _summary(job)
            runs.append({"alias": alias, "trial": n, "jobs_dir": str(folder),
                         **{k: getattr(summary, k, None) for k in ("passed", "failed", "errored", "verifier_errored",
                                                                   "total")}})
    if spec.matrix:
        atomic.write_json(matrix_summary(root), {"schema_version": 1, "matrix": spec.matrix,
                                                         "trials": spec.trials, "runs": runs})
    return code


def _repeat_outputs(spec: RunSpec, alias: str, n: int) -> dict[str, str]:
    """Each repeat's own trainer outputs: ``<dir of FILE>/<alias>/trial-NN/<FILE name>``, ``<DIR>/<alias>/trial-NN``."""
    out = {}
    for name in ("health_summary_out", "canonical_selection_out"):
        if getattr(spec, name):
            path = Path(getattr(spec, name))
            out[name] = str(path.parent / alias / f"trial-{n:02d}" / path.name)
    if spec.canonical_jobs_dir:
        out["canonical_jobs_dir"] = str(Path(spec.canonical_jobs_dir) / alias / f"trial-{n:02d}")
    return out


def _summary(job: Path | None) -> JobSummary | None:
    """The job's summary.json through its model; None when the run wrote none."""
    try:
        return read_record(JobSummary, JobPaths(job).summary) if job else None
    except Unreadable:
        return None
