"""Find the rollouts (finished trial folders) under a path and read their recorded model calls.

A path may be one trial folder, one job folder, or a jobs folder holding jobs
at any depth up to :data:`MAX_DEPTH` (``--trials`` and ``--matrix`` nest them
as ``<jobs>/<agent>/trial-NN/<job>/``). A rollout's ``job`` is its job
folder relative to the path given, so two jobs of the same name in different
``trial-NN`` folders stay apart when grouping.

A Harbor job folder (:func:`benchflow.jobs.layout.is_harbor_job`) is a job like
ours: its trials' records are read through :mod:`benchflow.records`, and its
conversations from each trial's ATIF trajectory (:mod:`.conversations`).

Exchanges are the lines of ``trajectory/llm_trajectory.jsonl``; only model
calls (Chat Completions, Messages, Responses) answered 200 become rows.
:func:`last_model_call` reads the file from its end, so the default rollout
mode parses one exchange per rollout, not twenty.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import UserError
from benchflow.jobs.layout import JobPaths, TrialPaths, is_harbor_job
from benchflow.records import TrialConfig, TrialResult, read_optional

MAX_DEPTH = 4
MODEL_CALL_TYPES = frozenset({"chat", "messages", "responses"})
_MODEL_PATHS = ("/chat/completions", "/messages", "/responses")


@dataclass
class Rollout:
    """One finished trial: its folder, where it sits, and its records."""

    trial: TrialPaths
    job: str
    """The job folder relative to the path given ('.' when the path is the job)."""
    rel: str
    """The trial folder relative to the path given (posix), or its name when the path is the trial."""
    result: TrialResult
    config: TrialConfig | None

    @property
    def task(self) -> str:
        return self.result.task_name

    @property
    def agent(self) -> str | None:
        return self.result.agent or (self.config.agent if self.config else None) or self.result.agent_name

    @property
    def model(self) -> str | None:
        return self.result.model or (self.config.model if self.config else None)

    @property
    def task_digest(self) -> str | None:
        return self.result.task_digest or (self.config.task_digest if self.config else None)

    @property
    def reward(self) -> float | None:
        return self.result.reward

    def key(self, field: str) -> str:
        """The value of one ``--group-by`` field."""
        value = {"task": self.task, "agent": self.agent, "model": self.model, "task_digest": self.task_digest,
                 "job": self.job}[field]
        return "" if value is None else str(value)


def _is_trial(path: Path) -> bool:
    """A trial folder (a Harbor job's root holds a result.json too, and its name a ``__``: not one)."""
    return "__" in path.name and (TrialPaths(path).result.is_file() or TrialPaths(path).config.is_file()) \
        and not is_harbor_job(path)


def _job_dirs(root: Path, depth: int = 0) -> Iterator[Path]:
    if JobPaths.is_job(root):
        yield root
        return
    if depth >= MAX_DEPTH:
        return
    with os.scandir(root) as entries:
        children = sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
    for name in children:
        yield from _job_dirs(root / name, depth + 1)


def trial_folders(root: Path) -> Iterator[tuple[TrialPaths, str, str]]:
    """(trial paths, job relative to root, trial relative to root) for every trial folder, sorted.

    Raises:
        UserError: ``root`` is not a folder.
    """
    if not root.is_dir():
        raise UserError(f"{root}: not a folder; give a trial folder, a job folder or a jobs folder")
    if _is_trial(root):
        yield TrialPaths(root), root.parent.name, root.name
        return
    for job in _job_dirs(root):
        job_rel = job.relative_to(root).as_posix()
        for trial in JobPaths(job).trials():
            yield trial, job_rel, trial.root.relative_to(root).as_posix()


def read_rollout(trial: TrialPaths, job: str, rel: str, notes: list[str]) -> Rollout | None:
    """The rollout of a trial folder, or None when it has no readable ``result.json``."""
    result = read_optional(TrialResult, trial.result, notes, name=trial.name)
    if result is None:
        return None
    config = read_optional(TrialConfig, trial.config, notes, name=trial.name)
    return Rollout(trial=trial, job=job, rel=rel, result=result, config=config)


def harbor_job_of(root: Path) -> Path | None:
    """The Harbor job ``root`` is, or whose trial it is; None for anything else."""
    return next((job for job in (root, root.parent) if is_harbor_job(job)), None)


def is_model_call(exchange: dict[str, Any]) -> bool:
    """A Chat Completions, Messages or Responses call (not a token count or model list)."""
    meta = exchange.get("metadata") if isinstance(exchange.get("metadata"), dict) else {}
    call_type = meta.get("call_type")
    if call_type is not None:
        return call_type in MODEL_CALL_TYPES
    request = exchange.get("request") if isinstance(exchange.get("request"), dict) else {}
    path = str(request.get("path") or "").split("?", 1)[0]
    return path.endswith(_MODEL_PATHS) and not path.endswith("/count_tokens")


def status_of(exchange: dict[str, Any]) -> int | None:
    response = exchange.get("response")
    status = response.get("status_code") if isinstance(response, dict) else None
    return status if isinstance(status, int) else None


def is_ok_call(exchange: dict[str, Any]) -> bool:
    return is_model_call(exchange) and status_of(exchange) == 200


def _lines(path: Path) -> list[bytes]:
    with open(path, "rb") as handle:
        return [line for line in handle.read().split(b"\n") if line.strip()]


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def read_exchanges(path: Path) -> list[tuple[int, dict[str, Any] | None]]:
    """(line index, exchange or None when the line is not a JSON object) for every line."""
    return [(index, _parse(line)) for index, line in enumerate(_lines(path))]


def last_model_call(path: Path) -> tuple[int, int, dict[str, Any] | None]:
    """(lines, index of the last successful model call, that exchange) — parsing from the end."""
    lines = _lines(path)
    for index in range(len(lines) - 1, -1, -1):
        exchange = _parse(lines[index])
        if exchange is not None and is_ok_call(exchange):
            return len(lines), index, exchange
    return len(lines), -1, None
