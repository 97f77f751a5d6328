"""What a monitor scores against: the rubric, the judge model and, when given, the task.

The rubric is ``--rubric FILE`` (any rubric an ``llm-judge`` task uses: JSON/YAML/TOML ``criteria`` or
``dimensions``, or Markdown as one ``overall`` criterion, contracts §2.5); else, with ``--task``, that
task's own llm-judge rubric (its verifier.md strategy or ``verifier.judge``): the verifier the rollout
was scored with, as far as it runs without a sandbox; else the built-in ``default-rubric.json`` (did the
agent do what was asked, were its actions safe, is its report honest: the output, action and reasoning
spaces). A task whose verifier runs in a sandbox (test.sh, a script, reward-kit) or reads files an
agent judge is given cannot be replayed here: its instruction is used, the rubric is one of the others,
and a note says so.

The judge model is ``--model``, else the task's judge model, else :data:`DEFAULT_MODEL` (the default of
a task's ``verifier.judge.model``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError, VerifierError

DEFAULT_RUBRIC = Path(__file__).with_name("default-rubric.json")
DEFAULT_MODEL = "claude-sonnet-4-6"


@dataclass(frozen=True)
class Scoring:
    """Everything a monitor judges every rollout of one command with."""

    criteria: list[dict[str, Any]]
    """``{name, description, weight}`` each (verify's rubric reader)."""
    text: str
    """The rubric as written: the judge reads it."""
    source: str
    """``builtin``, ``file:<path>`` or ``task:<name>``."""
    model: str
    instruction: str | None = None
    """The task given to the agent (``--task``), shown to the judge before the rubric."""
    context: str = ""
    """The task's judge context (its llm-judge ``context``)."""
    task: dict[str, Any] | None = None
    """``{name, digest, verifier}`` of ``--task``."""
    notes: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"source": self.source, "sha256": "sha256:" + hashlib.sha256(self.text.encode()).hexdigest(),
                "criteria": [{"name": c["name"], "weight": c["weight"]} for c in self.criteria]}


def _load(path: Path, flag: str) -> tuple[list[dict[str, Any]], str]:
    from benchflow.verify.strategies.judges import load_rubric

    if not path.is_file():
        raise ConfigError(f"{flag} {path}: no such rubric file; give a JSON, YAML, TOML or Markdown rubric")
    try:
        return load_rubric(path)
    except VerifierError as exc:
        raise ConfigError(f"{flag} {path}: {str(exc).removeprefix('verifier crashed: ')}") from None


def _task(task_dir: Path) -> tuple[Any, str, Any]:
    """(the task, its verifier's kind, its llm-judge settings or None)."""
    from benchflow.tasks import load_task
    from benchflow.verify.strategies import select
    from benchflow.verify.strategies.judges import llm_settings

    task = load_task(task_dir)
    try:
        chosen = select(task)
        settings = llm_settings(task, chosen.name, chosen.strategy) if chosen.kind == "llm-judge" else None
    except VerifierError as exc:
        raise ConfigError(f"--task {task_dir}: {str(exc).removeprefix('verifier crashed: ')}") from None
    return task, chosen.kind, settings


def resolve(rubric: Path | None = None, task_dir: Path | None = None, model: str | None = None) -> Scoring:
    """The scoring of one monitor command.

    Raises:
        ConfigError: a rubric that is missing or does not parse, a task whose verifier.md does not parse.
        TaskError: ``task_dir`` is not a task folder that loads.
    """
    notes: list[str] = []
    task = kind = settings = None
    if task_dir is not None:
        task, kind, settings = _task(task_dir)
    if rubric is not None:
        criteria, text = _load(rubric, "--rubric")
        source = f"file:{rubric}"
    elif settings is not None:
        criteria, text = _load(settings[0], f"--task {task_dir}: its llm-judge rubric")
        source = f"task:{task.name}"
    else:
        criteria, text = _load(DEFAULT_RUBRIC, "the built-in rubric")
        source = "builtin"
    if task is not None and settings is None:
        notes.append(f"the task's verifier ({kind}) needs a sandbox; scored with the "
                     + ("--rubric file" if rubric is not None else "built-in monitor rubric") + " instead")
    return Scoring(criteria=criteria, text=text, source=source,
                   model=model or (settings[1] if settings else None) or DEFAULT_MODEL,
                   instruction=task.instruction if task is not None else None,
                   context=settings[3] if settings else "",
                   task={"name": task.name, "digest": task.digest(), "verifier": kind} if task else None,
                   notes=notes)
