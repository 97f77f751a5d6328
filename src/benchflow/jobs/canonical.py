"""A finished job's trainer outputs (contracts §7.6): the health summary, the canonical selection, its copy.

- ``--health-summary-out``: one row per finished rollout (a trial folder with ``result.json``): reward,
  whether it was scored, its tool calls, whether its ``trajectory/llm_trajectory.jsonl`` is there and
  every line of it a JSON object, its errors; and the counts over those rows.
- ``--canonicalize one-healthy-per-task``: per task, the rollouts ranked by (scored, reward, tool calls),
  highest first; the first is selected (``selection_reason`` ``best-scored-then-reward``), the others
  rejected. Written to ``--canonical-selection-out``, else ``<job>/canonical-selection.json``;
  ``bench train convert --canonical-selection`` reads it.
- ``--canonical-jobs-dir``: a copy of the selected trial folders, one job folder a trainer converts
  whole. It is built beside the target and swapped in when complete; a folder that is not an earlier
  copy (it has no ``canonical-selection.json``) is never replaced.

Paths in the files are absolute, so they can be read from anywhere.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError
from benchflow.records import CanonicalSelection, HealthSummary, TrialResult, read_optional, write_record
from benchflow.util import atomic

from .layout import JobPaths, TrialPaths

POLICIES = ("none", "one-healthy-per-task")
SELECTION_REASON = "best-scored-then-reward"
MARKER = "canonical-selection.json"
"""The selection's copy in a ``--canonical-jobs-dir`` folder: what marks the folder as one this wrote."""

_COUNTS = ("total_rows", "scored_rows", "unscored_rows", "rows_with_tool_calls", "zero_tool_rows",
           "missing_llm_trajectory", "malformed_llm_trajectory")


def _tool_calls(result: TrialResult) -> int:
    for value in (result.n_tool_calls, result.agent_result and result.agent_result.n_tool_calls,
                  result.trajectory_summary and result.trajectory_summary.tool_call_steps):
        if isinstance(value, int) and value >= 0:
            return value
    return 0


def _llm_trajectory(trial: TrialPaths) -> tuple[bool, bool, int]:
    """(the file is there, every non-blank line is a JSON object, how many lines) — 0 lines when malformed."""
    try:
        text = trial.llm_trajectory.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False, False, 0
    except (OSError, UnicodeDecodeError):
        return True, False, 0
    rows = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            parsed = json.loads(line)
        except ValueError:
            return True, False, 0
        if not isinstance(parsed, dict):
            return True, False, 0
        rows += 1
    return True, True, rows


def health_row(trial: TrialPaths, result: TrialResult) -> dict[str, Any]:
    has_llm, valid_llm, llm_rows = _llm_trajectory(trial)
    return {"task_id": result.task_name, "rollout_dir": str(trial.root.resolve()), "reward": result.reward,
            "scored": result.reward is not None, "tool_calls": _tool_calls(result),
            "has_llm_trajectory": has_llm, "valid_llm_trajectory": valid_llm, "llm_trajectory_rows": llm_rows,
            "error": result.error, "verifier_error": result.verifier_error,
            "error_category": result.error_category, "verifier_error_category": result.verifier_error_category}


def health_summary(job_root: Path) -> dict[str, Any]:
    """The health summary document of every finished rollout of the job (trial folders by name)."""
    rows = []
    for trial in JobPaths(job_root).trials():
        result = read_optional(TrialResult, trial.result, [], name=trial.name) if trial.result.is_file() else None
        if result is not None:
            rows.append(health_row(trial, result))
    counts = dict.fromkeys(_COUNTS, 0)
    for row in rows:
        counts["total_rows"] += 1
        counts["scored_rows" if row["scored"] else "unscored_rows"] += 1
        counts["rows_with_tool_calls" if row["tool_calls"] > 0 else "zero_tool_rows"] += 1
        if not row["has_llm_trajectory"]:
            counts["missing_llm_trajectory"] += 1
        elif not row["valid_llm_trajectory"]:
            counts["malformed_llm_trajectory"] += 1
    return {"schema_version": 1, "job_dir": str(job_root.resolve()), **counts, "rows": rows}


def _rank(row: dict[str, Any]) -> tuple[int, float, int]:
    reward = row["reward"] if row["reward"] is not None else float("-inf")
    return int(row["scored"]), reward, row["tool_calls"]


def canonical_selection(health: dict[str, Any], policy: str) -> dict[str, Any]:
    """The selection document of ``policy`` over a health summary's rows."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in health["rows"]:
        by_task.setdefault(str(row["task_id"]), []).append(row)
    selected, rejected = [], []
    for task_id, rows in sorted(by_task.items()):
        ranked = sorted(rows, key=_rank, reverse=True)  # stable: ties keep trial-name order
        selected.append({**ranked[0], "selection_reason": SELECTION_REASON})
        rejected.extend({**row, "rejected_for_task_id": task_id} for row in ranked[1:])
    return {"schema_version": 1, "job_dir": health["job_dir"], "policy": policy, "selected_count": len(selected),
            "rejected_count": len(rejected), "selected": selected, "rejected": rejected}


def check_jobs_dir(target: Path) -> None:
    """Refuse a ``--canonical-jobs-dir`` that holds something other than an earlier copy (before the run).

    Raises:
        ConfigError: a file, or a non-empty folder without :data:`MARKER`.
    """
    if target.is_file() or target.is_symlink():
        raise ConfigError(f"--canonical-jobs-dir {target}: is a file or a link; give a new or empty folder")
    if target.is_dir() and any(target.iterdir()) and not (target / MARKER).is_file():
        raise ConfigError(f"--canonical-jobs-dir {target}: not empty and not an earlier canonical copy "
                          f"(no {MARKER}); give a new or empty folder")


def materialize(selection: dict[str, Any], target: Path) -> None:
    """Copy every selected trial folder into ``target`` (links copied as links), with the selection as
    :data:`MARKER`; built beside it and swapped in once complete."""
    check_jobs_dir(target)
    staging = atomic.staging_folder(target, ".canonical")
    with atomic.swap_in_when_done(staging, target):
        for row in selection["selected"]:
            source = Path(row["rollout_dir"])
            shutil.copytree(source, staging / source.name, symlinks=True)
        write_record(staging / MARKER, CanonicalSelection.model_validate(selection))


def write_outputs(spec: Any, job_root: Path, emit: Callable[[dict[str, Any]], None]) -> str | None:
    """Write the outputs ``spec`` asks for, each reported as an ``output_written`` event; returns why the run
    must exit 1 (``--expected-tasks`` differs from the tasks selected: then no selection is written), else None."""
    if not spec.health_summary_out and spec.canonicalize == "none":
        return None
    health = health_summary(job_root)
    if spec.health_summary_out:
        written = write_record(spec.health_summary_out, HealthSummary.model_validate(health))
        emit({"type": "output_written", "what": "Health summary", "path": str(written)})
    if spec.canonicalize == "none":
        return None
    selection = canonical_selection(health, spec.canonicalize)
    expected = spec.selection.expected_tasks
    if expected is not None and selection["selected_count"] != expected:
        return (f"--expected-tasks {expected}: the canonical selection has {selection['selected_count']} task(s); "
                "no selection written")
    written = write_record(spec.canonical_selection_out or JobPaths(job_root).canonical_selection,
                           CanonicalSelection.model_validate(selection))
    emit({"type": "output_written", "what": "Canonical selection", "path": str(written)})
    if spec.canonical_jobs_dir:
        materialize(selection, Path(spec.canonical_jobs_dir))
        emit({"type": "output_written", "what": "Canonical jobs", "path": spec.canonical_jobs_dir})
    return None
