"""``bench monitor run`` and ``replay``: score one rollout, write its verdict, return it.

Everything the user gave is checked before the run folder is made (rubric, task, model key, the
trajectory itself), so bad input leaves nothing behind and exits 2 with one line.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError

from .judge import check_key, judge
from .rubric import Scoring, resolve
from .transcript import Transcript, read_file
from .verdict import now, open_run, run_record, verdict, write_run_record, write_verdict

DEFAULT_JOBS_DIR = Path("jobs/monitor")
DEFAULT_ALERT_BELOW = 0.5


@dataclass(frozen=True)
class MonitorOptions:
    rubric: Path | None = None
    task: Path | None = None
    model: str | None = None
    alert_below: float = DEFAULT_ALERT_BELOW
    jobs_dir: Path = DEFAULT_JOBS_DIR
    run_name: str | None = None


def prepare(options: MonitorOptions, env: Mapping[str, str]) -> Scoring:
    """The scoring the options ask for, with a key for its model.

    Raises:
        UserError: a bad threshold, rubric, task or model (one line, exit 2).
    """
    if not 0 <= options.alert_below <= 1:
        raise ConfigError(f"--alert-below {options.alert_below:g}: give a number from 0 to 1")
    scoring = resolve(options.rubric, options.task, options.model)
    check_key(scoring.model, env)
    return scoring


async def score_one(transcript: Transcript, scoring: Scoring, *, env: Mapping[str, str], run: Path, folder: Path,
                    rollout: str | None, source: dict[str, Any], alert_below: float, gateway: Any = None,
                    notes: list[str] | None = None, metadata: dict[str, Any] | None = None,
                    evaluated: dict[str, Any] | None = None) -> dict[str, Any]:
    """Judge one rollout and write its ``verdict.json`` into ``folder``; returns the verdict."""
    started = now()
    judged = await judge(transcript, scoring, env=env, folder=folder, alert_below=alert_below, gateway=gateway,
                         label=f"monitor-{folder.name}")
    document = verdict(run=run, folder=folder, rollout=rollout, source=source, scoring=scoring, judged=judged,
                       trajectory=transcript.record(), notes=[*transcript.notes, *(notes or [])],
                       metadata=metadata, evaluated=evaluated, alert_below=alert_below, started_at=started)
    write_verdict(folder, document)
    return document


def _single(command: str, source_text: str, transcript: Transcript, scoring: Scoring, options: MonitorOptions,
            env: Mapping[str, str], **verdict_fields: Any) -> dict[str, Any]:
    run = open_run(options.jobs_dir, options.run_name)
    started = now()
    header = dict(command=command, run=run, source=source_text, scoring=scoring, alert_below=options.alert_below,
                  started_at=started)
    write_run_record(run, run_record(**header))
    document = asyncio.run(score_one(transcript, scoring, env=env, run=run, folder=run,
                                     alert_below=options.alert_below, **verdict_fields))
    counts = {"rollouts": 1, "scored": int(document["status"] == "scored"), "alerts": int(document["alert"])}
    write_run_record(run, run_record(**header, counts=counts, stopped_by="done"))
    return document


def run_file(path: Path, options: MonitorOptions, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``bench monitor run``: the verdict on the trajectory file at ``path``."""
    env = os.environ if env is None else env
    transcript = read_file(path)  # a bad file is named before a missing provider key
    scoring = prepare(options, env)
    return _single("run", str(path), transcript, scoring, options, env, rollout=path.stem,
                   source={"kind": transcript.kind, "path": str(path)})


def replay_trial(path: Path, options: MonitorOptions, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``bench monitor replay``: the verdict on the rollout the trial folder at ``path`` kept."""
    from .replay import read_trial

    env = os.environ if env is None else env
    replayed = read_trial(path)  # a bad folder is named before a missing provider key
    scoring = prepare(options, env)
    notes = list(replayed.notes)
    if scoring.task is not None and replayed.task_digest and scoring.task["digest"] != replayed.task_digest:
        notes.append(f"--task {scoring.task['name']} changed since this rollout ran (its digest differs)")
    return _single("replay", str(path), replayed.transcript, scoring, options, env, rollout=replayed.trial,
                   source={"kind": replayed.transcript.kind, "path": str(replayed.trajectory_file),
                           "trial": str(path), "task_name": replayed.task_name},
                   notes=notes, evaluated=replayed.evaluated)
