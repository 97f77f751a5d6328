"""Review rubrics (contracts §8.4): v0.1 checks and v0.2 weighted criteria, strictly validated.

v0.1 criteria are ``{name, description, guidance}`` and get ``pass|fail|not_applicable``.
v0.2 criteria carry both ``blocker`` (0/1) and ``weight`` (1..10) as strict integers:
blockers get ``pass|fail``, the others a score 0/1/2. A file that mixes the two, gives
one field without the other, or has no scored criterion is refused with every problem
named. ``description`` is the author's note and is never shown to the reviewer.
"""

from __future__ import annotations

import hashlib
import json
import keyword
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchflow.errors import ConfigError

DEFAULT_RUBRIC = Path(__file__).with_name("default-rubric.json")
_TOP_KEYS = {"criteria", "name", "description"}
_V01_KEYS = {"name", "description", "guidance"}
_V02_KEYS = _V01_KEYS | {"blocker", "weight"}


class RubricError(ConfigError):
    """A rubric file that is not a valid v0.1 or v0.2 rubric; the message names file, field and fix."""


@dataclass(frozen=True)
class Criterion:
    name: str
    guidance: str
    description: str = ""
    blocker: bool = False
    weight: int | None = None
    """None in a v0.1 rubric."""

    @property
    def kind(self) -> Literal["check", "blocker", "scored"]:
        if self.weight is None:
            return "check"
        return "blocker" if self.blocker else "scored"


@dataclass(frozen=True)
class Rubric:
    version: Literal["0.1", "0.2"]
    criteria: tuple[Criterion, ...]
    source: str
    """Where it came from: ``builtin``, ``task:<name>`` or the file path."""
    sha256: str
    name: str = ""

    def record(self) -> dict[str, Any]:
        """What a report keeps about the rubric (names, kinds, weights; no author notes)."""
        return {"version": self.version, "name": self.name or None, "source": self.source, "sha256": self.sha256,
                "criteria": [{"name": c.name, "kind": c.kind, "weight": c.weight} for c in self.criteria]}


def _reserved(name: str) -> bool:
    from pydantic import BaseModel

    return name.startswith("_") or name.startswith("model_") or hasattr(BaseModel, name)


def _name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        return f"name {name!r} must be a Python identifier (letters, digits, '_'), e.g. 'method_soundness'"
    if _reserved(name):
        return f"name {name!r} is reserved (starts with '_' or 'model_', or is a pydantic attribute); rename it"
    return None


def _strict_int(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def parse_rubric(data: Any, source: str) -> Rubric:
    """The rubric in ``data`` (already-decoded JSON).

    Raises:
        RubricError: every problem found, joined on one line.
    """
    if not isinstance(data, dict):
        raise RubricError(f"{source}: a rubric is a JSON object with a 'criteria' list")
    problems: list[str] = [f"{source}: unknown key {k!r} (allowed: criteria, name, description)"
                           for k in sorted(set(data) - _TOP_KEYS)]
    raw = data.get("criteria")
    if not isinstance(raw, list) or not raw:
        raise RubricError(f"{source}: needs a non-empty 'criteria' list of objects")
    weighted = {i for i, c in enumerate(raw) if isinstance(c, dict) and ("blocker" in c or "weight" in c)}
    version: Literal["0.1", "0.2"] = "0.2" if weighted else "0.1"
    criteria: list[Criterion] = []
    seen: set[str] = set()
    for i, crit in enumerate(raw):
        where = f"{source}: criteria[{i}]"
        if not isinstance(crit, dict):
            problems.append(f"{where} must be an object with name and guidance")
            continue
        allowed = _V02_KEYS if version == "0.2" else _V01_KEYS
        problems += [f"{where}: unknown key {k!r}" for k in sorted(set(crit) - allowed)]
        name, guidance, description = crit.get("name"), crit.get("guidance", ""), crit.get("description", "")
        problem = _name_problem(name)
        if problem:
            problems.append(f"{where}: {problem}")
        elif name in seen:
            problems.append(f"{where}: name {name!r} appears twice; criterion names must be unique")
        seen.add(name if isinstance(name, str) else "")
        if not isinstance(guidance, str) or not isinstance(description, str):
            problems.append(f"{where}: 'guidance' and 'description' must be strings")
        if not (isinstance(guidance, str) and guidance.strip()) and not (isinstance(description, str)
                                                                        and description.strip()):
            problems.append(f"{where}: give the reviewer 'guidance' (what earns pass/fail or each score)")
        blocker, weight = crit.get("blocker"), crit.get("weight")
        if version == "0.2":
            if i not in weighted:
                problems.append(f"{where}: v0.2 rubric (another criterion has blocker/weight): add "
                                "'blocker' (0 or 1) and 'weight' (1..10) here too")
                continue
            if not _strict_int(blocker, 0, 1):
                problems.append(f"{where}: 'blocker' must be the integer 0 or 1 (got {blocker!r})")
            if not _strict_int(weight, 1, 10):
                problems.append(f"{where}: 'weight' must be an integer from 1 to 10 (got {weight!r})")
        if not problems:
            criteria.append(Criterion(name=name, guidance=guidance, description=description,
                                      blocker=blocker == 1, weight=weight if version == "0.2" else None))
    if not problems and version == "0.2" and not any(c.kind == "scored" for c in criteria):
        problems.append(f"{source}: needs at least one scored criterion (blocker 0)")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise RubricError(problems[0] + more + ("" if not more else ": " + "; ".join(problems[1:4])))
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    name = data.get("name") if isinstance(data.get("name"), str) else ""
    return Rubric(version=version, criteria=tuple(criteria), source=source, name=name,
                  sha256="sha256:" + hashlib.sha256(canonical).hexdigest())


def load_rubric(path: Path, source: str | None = None) -> Rubric:
    """Read and validate a rubric file.

    Raises:
        RubricError: missing, unreadable, not JSON, or not a valid rubric.
    """
    label = source or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RubricError(f"{path}: no such rubric file; give a JSON rubric (contracts §8.4)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError(f"{path}: cannot read the rubric ({exc}); give a UTF-8 JSON file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RubricError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); fix the syntax") from None
    return parse_rubric(data, label)


def default_rubric() -> Rubric:
    """The built-in v0.1 rubric: ``reward_hacking`` and ``task_specification``."""
    return load_rubric(DEFAULT_RUBRIC, "builtin")
