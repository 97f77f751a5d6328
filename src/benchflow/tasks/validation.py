"""Turn pydantic validation errors into one-line messages a task author can act on.

Each message names the file, the dotted key, what is wrong and what to do,
e.g. ``task.md: unknown key 'agent.timeout' (did you mean 'timeout_sec'?)``.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from benchflow.errors import TaskError

# Spellings from other layouts that deserve a precise hint instead of "unknown key".
RENAMES = {
    "environment": "sandbox",
    "environment_mode": "sandbox_mode",
    "allow_internet": "network_mode",
}


def did_you_mean(key: str, choices: typing.Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close spelling, else an empty string."""
    close = difflib.get_close_matches(key, sorted(choices), n=1, cutoff=0.7)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Pydantic models reachable from an annotation (through Optional, list, dict, tuple)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, dict, tuple):
        for arg in typing.get_args(annotation):
            out.extend(_models_in(arg))
    return out


def fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> set[str]:
    """Field names of the model found by walking ``loc`` from ``model`` (empty if lost)."""
    current: list[type[BaseModel]] = [model]
    for part in loc:
        if not isinstance(part, str):
            continue
        following: list[type[BaseModel]] = []
        for cls in current:
            field = cls.model_fields.get(part)
            if field is not None:
                following.extend(_models_in(field.annotation))
        if not following:
            # ``part`` may be a dict key or a union tag; stay where we are.
            continue
        current = following
    names: set[str] = set()
    for cls in current:
        names.update(cls.model_fields)
    return names


_PRIMITIVE_TAGS = {"str", "int", "float", "bool", "none", "bytes"}


def _model_names(model: type[BaseModel], seen: set[str] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    if model.__name__ not in seen:
        seen.add(model.__name__)
        for field in model.model_fields.values():
            for sub in _models_in(field.annotation):
                _model_names(sub, seen)
    return seen


def _is_branch_tag(part: Any, models: set[str]) -> bool:
    """pydantic puts union branch names into ``loc``; they mean nothing to an author."""
    return isinstance(part, str) and (part in _PRIMITIVE_TAGS or "[" in part or part in models)


def dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def _clean_loc(loc: tuple[Any, ...], model: type[BaseModel]) -> tuple[Any, ...]:
    models = _model_names(model)
    return tuple(p for p in loc if not _is_branch_tag(p, models))


def describe(error: dict[str, Any], source: str, model: type[BaseModel], prefix: tuple[Any, ...] = ()) -> str:
    """One actionable line for one pydantic error."""
    loc = prefix + _clean_loc(tuple(error.get("loc", ())), model)
    key = dotted(loc) or "(top level)"
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        name = str(loc[-1])
        if name in RENAMES:
            return (f"{source}: key '{key}' is not valid here; rename it to "
                    f"'{RENAMES[name]}'")
        hint = did_you_mean(name, fields_at(model, loc[len(prefix):-1]))
        return f"{source}: unknown key '{key}'{hint}; fix the spelling or remove it"
    if kind == "missing":
        return f"{source}: '{key}' is required; add it"
    message = str(error.get("msg", "invalid value"))
    message = re.sub(r" or instance of \w+", "", message.removeprefix("Value error, "))
    got = error.get("input")
    shown = f" (got {got!r})" if kind not in ("value_error", "assertion_error") and not isinstance(got, dict) else ""
    if kind in ("greater_than", "greater_than_equal") and "timeout" in key:
        return f"{source}: '{key}' {message.lower()}{shown}; use a positive number of seconds"
    return f"{source}: '{key}': {message}{shown}"


def issues_of(exc: ValidationError, source: str, model: type[BaseModel],
              prefix: tuple[Any, ...] = ()) -> list[str]:
    errors = exc.errors()
    # For a union such as ``str | ArtifactSpec`` given a mapping, the "should be a string"
    # branch error is noise next to the errors of the model branch.
    primitive = [e for e in errors if any(isinstance(p, str) and p in _PRIMITIVE_TAGS for p in e["loc"])]
    if primitive and len(primitive) < len(errors):
        errors = [e for e in errors if e not in primitive]
    out: list[str] = []
    for err in errors:
        line = describe(err, source, model, prefix)
        if line not in out:
            out.append(line)
    return out


def validate(model: type[BaseModel], data: dict[str, Any], source: str) -> Any:
    """``model.model_validate(data)`` or a TaskError naming the first problem (and how many more)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise problems_error(issues_of(exc, source, model)) from None


def problems_error(problems: list[str]) -> TaskError:
    """One TaskError for them all: its message names the first, ``bench tasks check`` lists each."""
    return TaskError(summarize(problems), problems=problems)


def summarize(issues: list[str]) -> str:
    if len(issues) == 1:
        return issues[0]
    return f"{issues[0]} (and {len(issues) - 1} more problem{'s' if len(issues) > 2 else ''}; bench tasks check lists them)"
