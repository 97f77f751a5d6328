"""Parsed ``task.md`` frontmatter, kept by content between runs so a rerun need not load PyYAML.

Importing PyYAML costs ``bench run`` ~15 ms before its first container, and a task's settings
rarely change between the runs of it (resumes, other agents and models, repeated trials). A
frontmatter whose parse is plain JSON data (mappings with text keys, lists, text, numbers,
booleans, null: what task settings are) is kept as JSON under the SHA-256 of its text; the next
parse of the same text reads that file instead. Anything JSON would not give back exactly (a
date, a non-text key, NaN) is never kept, nor a YAML error, nor a frontmatter holding anything
that looks like a secret (a key's shape, a secret-named field: what :func:`~benchflow.util.redact.redact_obj`
would mask), which stays in the task's own file only: those are parsed every time. A cache entry
that cannot be read or is not what was kept is parsed again and rewritten.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from benchflow.util import atomic
from benchflow.util.cache_dir import cache_root

FOLDER = "frontmatter"
KIND = "benchflow.frontmatter/1"


def _entry(raw: str) -> Path:
    digest = hashlib.sha256(raw.encode("utf-8")).hexdigest()
    return cache_root() / FOLDER / digest[:2] / f"{digest}.json"


def cached(raw: str) -> tuple[bool, Any]:
    """``(True, data)`` when ``raw`` was parsed before and kept, else ``(False, None)``."""
    try:
        entry = json.loads(_entry(raw).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    if isinstance(entry, dict) and entry.get("kind") == KIND and entry.get("text") == raw and "data" in entry:
        return True, entry["data"]
    return False, None


def keep(raw: str, data: Any) -> None:
    """Keep ``data`` (the parse of ``raw``) when JSON gives it back exactly; a read-only cache keeps nothing."""
    try:
        text = json.dumps({"kind": KIND, "text": raw, "data": data}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return  # a date, a set, NaN: not JSON
    back = json.loads(text)["data"]
    if back != data or not _same_types(data, back):
        return  # e.g. a non-text key that JSON would turn into text
    from benchflow.util.redact import redact_obj

    if redact_obj(data) != data:
        return  # never a copy of a secret outside the task's own file
    try:
        atomic.write_text(_entry(raw), text)
    except OSError:
        pass


def _same_types(a: Any, b: Any) -> bool:
    """``a == b`` holds; also the same types all the way down (``1 == 1.0 == True`` in Python)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return True
