"""Preference ratings (``ratings.v1.json`` from ``bench preferences rank``) shown beside the jobs.

A ratings file belongs to what the viewer shows when it lies in a shown job
folder or one folder below it (a store kept inside the job), or in the opened
folder or one below it (a store kept beside the jobs). Each is read as data
and handed to the page trimmed to its tables; a file that does not parse is
left out with a note.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.util import nofollow

NAME = "ratings.v1.json"
MAX_BYTES = 8 * 1024 * 1024


def _candidates(folder: Path) -> list[Path]:
    found = [folder / NAME]
    try:
        with os.scandir(folder) as entries:  # trial folders (<task>__<id>) are skipped without a stat each
            found += sorted(folder / e.name / NAME for e in entries
                            if "__" not in e.name and not e.name.startswith(".") and e.is_dir(follow_symlinks=False))
    except OSError:
        pass
    return [p for p in found if p.is_file() and not p.is_symlink()]


def _trim(doc: dict[str, Any]) -> dict[str, Any]:
    tables = []
    for table in doc.get("tables") or []:
        agreement = table.get("agreement") or {}
        tables.append({
            "raters": table.get("raters"), "cluster": table.get("cluster"), "votes": table.get("votes"),
            "ratings": [{k: r.get(k) for k in ("name", "rating", "low", "high", "games", "wins", "losses", "ties")}
                        for r in table.get("ratings") or []],
            "agreement": {k: agreement.get(k) for k in ("raw", "min", "met")},
        })
    return {"by": doc.get("by"), "created_at": doc.get("created_at"), "provisional": bool(doc.get("provisional")),
            "pairs": doc.get("pairs"), "tables": tables}


def find_ratings(root: Path, jobs: list[Path], ident: Callable[[Path], str]) -> list[dict[str, Any]]:
    """Every ratings document near ``root`` or ``jobs``, with ``id`` and the ``jobs`` (idents) it covers."""
    seen: dict[Path, dict[str, Any]] = {}
    places = [(job, [job]) for job in jobs] + ([(root, [])] if root.is_dir() else [])
    for folder, own in places:
        for path in _candidates(folder):
            entry = seen.get(path.resolve())
            if entry is None:
                try:
                    doc = json.loads(nofollow.read_bytes(path, limit=MAX_BYTES))
                except (OSError, ValueError, nofollow.UnsafeFile):
                    continue
                if not isinstance(doc, dict) or doc.get("kind") != "benchflow.ratings":
                    continue
                listed = {str(Path(j)) for j in doc.get("jobs") or [] if isinstance(j, str)}
                covered = [job for job in jobs if str(job) in listed]
                entry = {**_trim(doc), "id": ident(path), "jobs": [ident(j) for j in covered]}
                seen[path.resolve()] = entry
            for job in own:
                if ident(job) not in entry["jobs"]:
                    entry["jobs"].append(ident(job))
    return list(seen.values())
