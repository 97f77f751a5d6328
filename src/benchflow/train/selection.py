"""Name lists given as files: ``--canonical-selection`` (which rollouts) and ``--task-manifest`` (which tasks).

Both are read leniently, since the files come from other tools: a JSON list,
or an object whose ``trials`` / ``rollouts`` / ``selected`` / ``selection`` /
``tasks`` key holds one, or JSONL; each entry is a name or an object naming
one in a usual key (``trial_name``, ``rollout_name``, ``source_rollout_dir``,
``task_name``, ``name``, …).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchflow.errors import UserError

_LIST_KEYS = ("trials", "rollouts", "selected", "selection", "rows", "tasks")
_ROLLOUT_KEYS = ("trial_name", "rollout_name", "trial", "rollout_dir", "source_rollout_dir", "rel", "path")
_TASK_KEYS = ("task_name", "task_id", "task", "name", "id")


def _entries(path: Path, flag: str) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            raise UserError(f"{flag} {path}: not JSON or JSONL; give a list of names") from None
    if isinstance(data, dict):
        found = next((data[k] for k in _LIST_KEYS if isinstance(data.get(k), list)), None)
        if found is None:
            raise UserError(f"{flag} {path}: no list under any of {', '.join(_LIST_KEYS)}")
        data = found
    if not isinstance(data, list):
        raise UserError(f"{flag} {path}: expected a list of names")
    return data


def _names(entries: list[Any], keys: tuple[str, ...]) -> set[str]:
    names: set[str] = set()
    for entry in entries:
        if isinstance(entry, str):
            names.add(entry.rstrip("/"))
        elif isinstance(entry, dict):
            names.update(str(entry[k]).rstrip("/") for k in keys if isinstance(entry.get(k), str))
    return names


def rollout_names(path: Path, flag: str = "--canonical-selection") -> set[str]:
    """Trial folder names or trial paths (relative to the jobs folder) the file selects."""
    names = _names(_entries(path, flag), _ROLLOUT_KEYS)
    return names | {n.rsplit("/", 1)[-1] for n in names}


def task_names(path: Path, flag: str = "--task-manifest") -> set[str]:
    return _names(_entries(path, flag), _TASK_KEYS)
