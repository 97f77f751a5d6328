"""The trial folder a continuation starts from: what it ran with, how it ended, what its model said.

A trial folder (this BenchFlow's, BenchFlow 0.7's, or a downloaded copy of one) holds
``config.json`` (task, agent, model, sandbox, timeout), ``result.json`` (how it ended),
``prompts.json`` (what the agent was sent) and ``trajectory/llm_trajectory.jsonl`` (every model
call, in order). Reading it starts nothing and writes nothing: the original is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import JobFolderError
from benchflow.gateway.replay import RecordedCall, read_recording
from benchflow.jobs.layout import TrialPaths
from benchflow.records import TrialConfig, Unreadable, read_json, read_record
from benchflow.records.trial import TrialResult

TIMEOUT_CATEGORIES = frozenset({"timeout", "idle_timeout"})
"""How a trial that ran out of time ended (contracts §3.9): the runs worth continuing."""


class SourceError(JobFolderError):
    """A folder ``bench eval continue`` cannot continue; the message names the file and the fix."""


@dataclass(frozen=True)
class SourceTrial:
    """One original trial folder, read."""

    paths: TrialPaths
    config: TrialConfig
    result: TrialResult | None
    """None when the trial never finished recording (killed mid-run)."""
    prompts: list[str] | None
    """``prompts.json``; None when the folder has none (the task's prompts are sent then)."""
    calls: list[RecordedCall]

    @property
    def name(self) -> str:
        return self.paths.name

    @property
    def task_name(self) -> str:
        """The task's folder name: config.json's, else result.json's, else the trial folder's ``<task>__``."""
        named = self.config.task_name or (self.result.task_name if self.result else None)
        if named:
            return named
        if self.config.task_path:
            return Path(self.config.task_path).name
        return self.name.rsplit("__", 1)[0]

    @property
    def error_category(self) -> str | None:
        return self.result.error_category if self.result is not None else None

    @property
    def timed_out(self) -> bool:
        return self.error_category in TIMEOUT_CATEGORIES

    @property
    def reward(self) -> float | None:
        return self.result.reward if self.result is not None else None


def is_candidate(folder: Path) -> bool:
    """Looks like a trial folder a continuation could start from (``config.json`` + the recording)."""
    paths = TrialPaths(folder)
    return paths.config.is_file() and paths.llm_trajectory.is_file()


def ended_in_timeout(folder: Path) -> bool:
    """Its ``result.json`` says it ran out of time (read cheaply, for discovery)."""
    try:
        data = read_json(TrialPaths(folder).result)
    except Unreadable:
        return False
    return isinstance(data, dict) and data.get("error_category") in TIMEOUT_CATEGORIES


def read_source(folder: Path, *, require_timeout: bool = False) -> SourceTrial:
    """The trial folder ``folder``, read and checked.

    Raises:
        SourceError: not a trial folder, no recording, an unreadable record, or (``require_timeout``)
            a trial that did not end in a timeout.
        RecordingError: a recording that cannot be replayed (:func:`benchflow.gateway.replay.read_recording`).
    """
    folder = Path(folder).expanduser().resolve()
    paths = TrialPaths(folder)
    if not folder.is_dir():
        raise SourceError(f"{folder}: no such folder; give a trial folder (holding config.json and "
                          "trajectory/llm_trajectory.jsonl)")
    if not paths.config.is_file():
        raise SourceError(f"{paths.config}: missing; give a trial folder, not a job or jobs folder "
                          "(bench eval continue-batch finds the timed-out trials under a folder)")
    if not paths.llm_trajectory.is_file():
        raise SourceError(f"{paths.llm_trajectory}: missing; the trial's model calls were not recorded, so "
                          "there is nothing to replay (a control agent, or a run whose agent made no model call)")
    try:
        config = read_record(TrialConfig, paths.config, name=folder.name)
        result = read_record(TrialResult, paths.result, name=folder.name)
        prompts = read_json(paths.prompts)
    except Unreadable as exc:
        raise SourceError(f"{exc}; the trial cannot be continued from it") from None
    if prompts is not None and not (isinstance(prompts, list) and all(isinstance(p, str) for p in prompts)):
        raise SourceError(f"{paths.prompts}: not a JSON list of prompt strings; fix or remove it (the task's "
                          "prompts are sent then)")
    source = SourceTrial(paths=paths, config=config, result=result, prompts=prompts,
                         calls=read_recording(paths.llm_trajectory))
    if require_timeout and not source.timed_out:
        raise SourceError(f"{paths.result}: error_category is {source.error_category!r}, not a timeout; "
                          "--require-timeout continues only trials that ran out of time")
    return source
