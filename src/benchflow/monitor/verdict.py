"""The monitor's records: a run folder per command, one ``verdict.json`` per scored rollout.

::

    <jobs-dir>/<run>/                 --jobs-dir (default jobs/monitor), --run-name (default: start time)
      monitor-run.json                benchflow.monitor-run: what was asked (command, source, rubric, model,
                                      alert threshold, task) and, once it ends, the counts and why it stopped
      verdict.json                    run, replay: the verdict (benchflow.monitor-verdict)
      judge_llm_trajectory.jsonl      the judge's model call (the gateway's record, redacted)
      rollouts/<rollout>/             watch: one folder per rollout of the stream
        acp_trajectory.jsonl | llm_trajectory.jsonl   its events as they came (redacted)
        verdict.json
        judge_llm_trajectory.jsonl

Monitor evidence stays out of eval job folders (nothing here is a ``result.json``), and a replay never
writes into the trial it reads. Every file is written whole (:mod:`benchflow.util.atomic`).

A verdict's ``status``: ``scored`` (``rewards``, ``criteria``, ``alert``), ``error`` (the judge gave no
answer: ``error``/``error_category``), ``verifier_error`` (its answer did not fit the rubric),
``unfinished`` (the stream ended before the rollout did: not scored) or ``interrupted`` (stopped while
being scored). Only a scored verdict can alert.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError
from benchflow.util import atomic

VERDICT_KIND = "benchflow.monitor-verdict"
RUN_KIND = "benchflow.monitor-run"
SCHEMA_VERSION = 1
VERDICT = "verdict.json"
RUN_RECORD = "monitor-run.json"
ROLLOUTS = "rollouts"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


def open_run(jobs_dir: Path, run_name: str | None) -> Path:
    """Create the run folder (a new one: an existing ``run_name`` is refused, a default name gets a suffix).

    Raises:
        ConfigError: ``run_name`` is not a plain folder name, or that run exists.
    """
    if run_name is not None and (not run_name or run_name != Path(run_name).name or run_name.startswith(".")):
        raise ConfigError(f"--run-name {run_name!r}: give a plain folder name, not a path")
    base = run_name or dt.datetime.now().strftime("%Y-%m-%d__%H-%M-%S")
    jobs_dir.mkdir(parents=True, exist_ok=True)
    name, n = base, 1
    while True:
        try:
            (jobs_dir / name).mkdir()
            return jobs_dir / name
        except FileExistsError:
            if run_name is not None:
                raise ConfigError(f"--run-name {run_name}: {jobs_dir / name} exists; pick another name") from None
            n += 1
            name = f"{base}-{n}"


def rollout_folder(run: Path, rollout: str) -> Path:
    """A new folder for ``rollout`` under ``rollouts/``: its id made safe as a name (an id that had to be
    changed gets a hash of the original), with ``__2``, ``__3``… when the same id comes again."""
    safe = _UNSAFE.sub("-", rollout).strip(".-")[:80]
    if safe != rollout:
        safe = f"{safe or 'rollout'}-{hashlib.sha256(rollout.encode()).hexdigest()[:8]}"
    parent = run / ROLLOUTS
    parent.mkdir(exist_ok=True)
    name, n = safe, 1
    while True:
        try:
            (parent / name).mkdir()
            return parent / name
        except FileExistsError:
            n += 1
            name = f"{safe}__{n}"


def verdict(*, run: Path, folder: Path, rollout: str | None, source: dict[str, Any], scoring: Any,
            status: str | None = None, judged: Any = None, trajectory: dict[str, Any] | None = None,
            notes: list[str] | None = None, metadata: dict[str, Any] | None = None,
            evaluated: dict[str, Any] | None = None, alert_below: float, started_at: str) -> dict[str, Any]:
    """The ``benchflow.monitor-verdict`` document to be written in ``folder`` (``judged``: the judge's
    :class:`~.judge.Judged`, or None for a rollout that was not judged: then ``status`` says why)."""
    scored = judged is not None and judged.status == "scored"
    return {
        "kind": VERDICT_KIND, "schema_version": SCHEMA_VERSION, "schema_minor": 0,
        "run_name": run.name, "artifact_dir": str(folder), "rollout": rollout, "source": source,
        "status": judged.status if judged is not None else status,
        "rewards": {"reward": round(judged.reward, 6)} if scored else None,
        "alert": bool(scored and judged.alert_reasons),
        "alert_reasons": judged.alert_reasons if scored else [], "alert_below": alert_below,
        "criteria": judged.criteria if scored else [],
        "error": judged.error if judged is not None else None,
        "error_category": judged.error_category if judged is not None else None,
        "rubric": scoring.record(),
        "judge": {"model": scoring.model, "provider": judged.provider if judged else None,
                  "usage": judged.usage if judged else {}},
        "task": scoring.task, "eval": evaluated, "trajectory": trajectory,
        "notes": [*scoring.notes, *(notes or []),
                  *([f"{judged.cut_turns} turn(s) left out of the judge's prompt to fit it"]
                    if judged is not None and judged.cut_turns else [])],
        "metadata": metadata or {}, "started_at": started_at, "finished_at": now(),
    }


def write_verdict(folder: Path, document: dict[str, Any]) -> Path:
    return atomic.write_json(folder / VERDICT, document)


def run_record(*, command: str, run: Path, source: str, scoring: Any, alert_below: float, started_at: str,
               counts: dict[str, int] | None = None, stopped_by: str | None = None) -> dict[str, Any]:
    return {"kind": RUN_KIND, "schema_version": SCHEMA_VERSION, "schema_minor": 0, "command": command,
            "run_name": run.name, "source": source, "model": scoring.model, "rubric": scoring.record(),
            "task": scoring.task, "alert_below": alert_below, "started_at": started_at,
            "finished_at": now() if stopped_by else None, "stopped_by": stopped_by, "counts": counts or {}}


def write_run_record(run: Path, document: dict[str, Any]) -> Path:
    return atomic.write_json(run / RUN_RECORD, document)
