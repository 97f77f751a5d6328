"""Validity of a review rubric (``verifier/rubric.json``, contracts §8.4)."""

from __future__ import annotations

import json
import keyword
from pathlib import Path
from typing import Any

_RESERVED = frozenset({"model_config", "model_fields", "dict", "json", "copy", "schema"})


def _name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        return f"criterion name {name!r} must be a Python identifier"
    if name.startswith("_") or name.startswith("model_") or name in _RESERVED:
        return f"criterion name {name!r} is reserved; rename it"
    return None


def rubric_issues(path: Path) -> list[str]:
    """Problems of a review rubric file; empty when it is valid."""
    where = f"{path.parent.name}/{path.name}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return [f"{where}: not valid JSON ({exc}); fix the syntax"]
    criteria = data.get("criteria") if isinstance(data, dict) else None
    if not isinstance(criteria, list) or not criteria:
        return [f"{where}: needs a non-empty 'criteria' list"]
    issues: list[str] = []
    weighted = [isinstance(c, dict) and ("blocker" in c or "weight" in c) for c in criteria]
    for i, crit in enumerate(criteria):
        if not isinstance(crit, dict):
            issues.append(f"{where}: criteria[{i}] must be an object with name, description, guidance")
            continue
        problem = _name_problem(crit.get("name"))
        if problem:
            issues.append(f"{where}: criteria[{i}]: {problem}")
        if any(weighted):
            blocker, weight = crit.get("blocker"), crit.get("weight")
            if type(blocker) is not int or blocker not in (0, 1) or type(weight) is not int \
                    or not 1 <= weight <= 10:
                issues.append(f"{where}: criteria[{i}] needs integer 'blocker' (0 or 1) and "
                              "'weight' (1..10) like every other criterion")
    if any(weighted) and all(isinstance(c, dict) and c.get("blocker") == 1 for c in criteria):
        issues.append(f"{where}: needs at least one scored criterion (blocker 0)")
    return issues
