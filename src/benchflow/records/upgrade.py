"""Read any record a BenchFlow wrote into the current model: ``upgrade(TrialResult, data)``.

What it accepts:

* records of this version (``schema_version`` 1) and of a newer one (unknown
  fields are kept, known ones read);
* BenchFlow 0.7 records, which carry no ``schema_version`` and name a few
  things differently (``rollout_name`` only, no categories, tokens without a
  total, a Harbor-style ``verifier_result``, a top-level ``reward``);
* Harbor's records (a Harbor job folder's trial ``result.json`` and ``config.json``, and its job
  ``config.json`` as ``evaluation.json``): :mod:`.harbor` renames their fields;
* hand-edited records with a wrong-typed value: the value is left out with a
  note naming the file and field (``notes``), the rest of the record is read.
  Only a record missing a required field, or not a JSON object, is unreadable.

Each shape rule only fills a field the record lacks, so a current record
passes through unchanged.
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from . import harbor
from .base import SCHEMA_VERSION, Record

if TYPE_CHECKING:
    from .trial import TrialResult

R = TypeVar("R", bound=Any)

MAX_DROPPED = 50
"""Invalid values left out of one record before it is called unreadable."""

_TOKEN_PARTS = ("n_input_tokens", "n_output_tokens", "n_cache_read_tokens", "n_cache_creation_tokens")


class Unreadable(Exception):
    """A record exists but cannot be used; the message is the note shown to the user. Not a BenchError:
    every reader catches it to show the note beside the other rows, never as a run-ending error."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _result_shape(data: dict[str, Any], name: str | None) -> None:
    if harbor.is_trial_result(data):
        harbor.shape_trial_result(data)
    rewards = data.get("rewards")
    if not isinstance(rewards, dict):
        verdict = data.get("verifier_result")
        if isinstance(verdict, dict) and isinstance(verdict.get("rewards"), dict):
            data["rewards"] = verdict["rewards"]
        elif _number(rewards):
            data["rewards"] = {"reward": rewards}
        elif rewards is None and data.get("reward") is not None:
            data["rewards"] = {"reward": data["reward"]}
    if not data.get("task_name"):
        nested = data.get("task")  # some 0.7 exports: {"task": {"id": ...}}
        task = (data.get("task_id") or (nested.get("id") if isinstance(nested, dict) else None)
                or (name.rsplit("__", 1)[0] if name else None))
        if task:
            data["task_name"] = task
    data.setdefault("rollout_name", data.get("trial_name") or name)
    data.setdefault("trial_name", data.get("rollout_name"))
    if "agent" in data or "agent_name" in data:
        data.setdefault("agent", data.get("agent_name"))
        data.setdefault("agent_name", data.get("agent"))
    agent_result = data.get("agent_result")
    if isinstance(agent_result, dict):
        agent_result = data["agent_result"] = dict(agent_result)
        parts = [agent_result.get(key) for key in _TOKEN_PARTS]
        if agent_result.get("total_tokens") is None and any(_number(p) for p in parts):
            agent_result["total_tokens"] = sum(int(p) for p in parts if _number(p))
        data.setdefault("n_tool_calls", agent_result.get("n_tool_calls"))
    usage = data.get("usage")
    if isinstance(usage, dict):  # newer 0.10 records keep the cost under usage
        cost = usage.get("cost_usd", usage.get("cost_estimate"))
        block = data.get("agent_result") if isinstance(data.get("agent_result"), dict) else {}
        if block.get("cost_usd") is None and _number(cost):
            data["agent_result"] = {**block, "cost_usd": cost}


def _config_shape(data: dict[str, Any], name: str | None) -> None:
    if harbor.is_trial_config(data):
        harbor.shape_trial_config(data)
    path = data.get("task_path")
    if not data.get("task_name") and isinstance(path, str) and path:
        data["task_name"] = os.path.basename(path.rstrip("/"))


def _evaluation_shape(data: dict[str, Any], name: str | None) -> None:
    if harbor.is_job_config(data):
        harbor.shape_job_config(data)


_SHAPES = {
    "benchflow.records.trial.TrialResult": _result_shape,
    "benchflow.records.trial_config.TrialConfig": _config_shape,
    "benchflow.records.job.EvaluationRecord": _evaluation_shape,
}
"""By the model's dotted name: this module does not import the models it shapes (a plain run builds
``TrialResult`` only once its first sandbox is up)."""


def upgrade(model: type[R], data: Any, *, name: str | None = None, notes: list[str] | None = None,
            source: str | None = None) -> R:
    """``data`` (a parsed record of any version) as ``model``.

    Args:
        model: the record's model (``TrialResult``, ``TrialConfig``, ``TrialTiming``, ``JobSummary``, …).
        name: the trial folder's name, used when a record lacks its task or trial name.
        notes: where to say which values were left out (plain words, naming ``source``).
        source: the file the record came from, for messages.

    Raises:
        Unreadable: not a JSON object, or a required field is missing.
    """
    where = source or model.__name__
    if not isinstance(data, dict):
        raise Unreadable(f"{where}: not a JSON object")
    data = dict(data)
    shape = _SHAPES.get(f"{model.__module__}.{model.__qualname__}")
    if shape is not None:
        shape(data, name)
    if issubclass(model, Record) and not isinstance(data.get("schema_version"), int):
        data["schema_version"] = SCHEMA_VERSION  # 0.7 (no version): its shape is read by the rules above
    return _validate(model, data, notes, where)


def _validate(model: type[R], data: dict[str, Any], notes: list[str] | None, where: str) -> R:
    copied = False
    for _ in range(MAX_DROPPED):
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            errors = exc.errors()
        missing = next((e for e in errors if e["type"] == "missing"), None)
        if missing is not None:
            raise Unreadable(f"{where}: {_dotted(missing['loc'])}: missing; the record cannot be read") from None
        if not copied:
            data, copied = copy.deepcopy(data), True
        for loc in dict.fromkeys(tuple(e["loc"]) for e in errors):
            if not _drop(data, loc):
                raise Unreadable(f"{where}: {_dotted(loc)}: not valid") from None
        if notes is not None:
            notes.extend(f"{where}: {_dotted(e['loc'])}: {e['msg'].lower()}; left out" for e in errors)
    raise Unreadable(f"{where}: more than {MAX_DROPPED} values of the wrong type")


def _drop(data: dict[str, Any], loc: tuple[Any, ...]) -> bool:
    """Remove the value at ``loc`` (the enclosing dict entry when ``loc`` goes through a list).

    False when not even the top-level key is there; True when an earlier drop already removed it.
    """
    container: Any = data
    parent: tuple[dict[str, Any], str] | None = None
    for key in loc:
        if not isinstance(container, dict):
            break
        if key not in container:
            return parent is not None
        parent = (container, key)
        container = container[key]
    if parent is None:
        return False
    del parent[0][parent[1]]
    return True


def _dotted(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc)


def as_result(result: Any) -> TrialResult:
    """An in-memory result (the dict a trial just wrote, a test's dict) through the model.

    Only the outcome is needed from it, so a missing task name is no error.

    Raises:
        Unreadable: not a mapping.
    """
    from .trial import TrialResult

    if isinstance(result, TrialResult):
        return result
    if not isinstance(result, dict):
        raise Unreadable("result: not a JSON object")
    return upgrade(TrialResult, {**result, "task_name": result.get("task_name") or "?"})
