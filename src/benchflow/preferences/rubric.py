"""The rubric a preference store freezes: aspects a rater scores each output on.

Format (docs/collector-store.md)::

    {"id": "web-design", "version": "1",
     "aspects": [{"id": "layout", "label": "Layout", "help": "…", "min": 1, "max": 5}]}
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def parse_rubric(data: bytes, where: str) -> dict[str, Any]:
    """The rubric as a checked dict; ``where`` names the file in errors."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: not JSON ({exc}); give a rubric like "
                          '{"id": "…", "version": "1", "aspects": [{"id": "layout"}]}') from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("aspects"), list) or not doc["aspects"]:
        raise ConfigError(f"{where}: needs an 'aspects' list, each with an 'id'")
    seen: set[str] = set()
    aspects = []
    for i, aspect in enumerate(doc["aspects"]):
        if not isinstance(aspect, dict) or not isinstance(aspect.get("id"), str) or not _ID.match(aspect["id"]):
            raise ConfigError(f"{where}: aspects[{i}].id must be a short name (letters, digits, _ . -)")
        if aspect["id"] in seen:
            raise ConfigError(f"{where}: aspects[{i}].id {aspect['id']!r} appears twice")
        seen.add(aspect["id"])
        low, high = aspect.get("min", 1), aspect.get("max", 5)
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)) or low >= high:
            raise ConfigError(f"{where}: aspects[{i}] min/max must be numbers with min < max")
        aspects.append({"id": aspect["id"], "label": str(aspect.get("label") or aspect["id"]),
                        "help": str(aspect.get("help") or ""), "min": low, "max": high})
    return {"id": str(doc.get("id") or ""), "version": str(doc.get("version") or ""), "aspects": aspects}


def load_rubric(path: Path) -> tuple[dict[str, Any], bytes]:
    """The checked rubric and the exact bytes to freeze."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--rubric {path}: cannot read it ({exc.strerror})") from exc
    return parse_rubric(data, f"--rubric {path}"), data


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
