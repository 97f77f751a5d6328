"""Exact overlap of two task manifests (``bench tasks overlap``, contracts §7.6).

A manifest is the JSON ``--task-manifest-out`` writes: ``{"tasks": [{"task_id",
"digest", ...}]}``. Overlap is exact: same task id, or same content digest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchflow.errors import UserError

CAVEAT = ("Only exact matches are found: a task copied under another id shows up as a digest match, "
          "but an edited copy (even by one byte) or a paraphrased task does not.")


def read_manifest(path: str | Path) -> list[dict[str, Any]]:
    """The task rows of a manifest (a ``{"tasks": [...]}`` object or a bare list).

    Raises:
        UserError: unreadable, not JSON, or rows without a ``task_id``.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; give a task manifest JSON "
                        "(bench run --task-manifest-out writes one)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a readable JSON task manifest ({exc}); fix or regenerate it") from None
    rows = data.get("tasks") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise UserError(f"{path}: a task manifest needs a 'tasks' list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
            raise UserError(f"{path}: tasks[{i}] needs a string 'task_id'")
    return rows


def overlap(left: str | Path, right: str | Path, out: str | Path | None = None) -> dict[str, Any]:
    """The overlap report of two manifests (ids and digests on both sides); written to ``out`` if given."""
    lrows, rrows = read_manifest(left), read_manifest(right)
    lids = {r["task_id"] for r in lrows}
    rids = {r["task_id"] for r in rrows}
    ids = sorted(lids & rids)
    by_digest: dict[str, list[str]] = {}
    for row in rrows:
        if isinstance(row.get("digest"), str):
            by_digest.setdefault(row["digest"], []).append(row["task_id"])
    pairs = []
    for row in lrows:
        digest = row.get("digest")
        for right_id in by_digest.get(digest, []) if isinstance(digest, str) else []:
            pairs.append({"digest": digest, "left_task_id": row["task_id"], "right_task_id": right_id})
    pairs.sort(key=lambda p: (p["digest"], p["left_task_id"], p["right_task_id"]))
    report = {
        "schema_version": 1,
        "left": str(left),
        "right": str(right),
        "left_count": len(lrows),
        "right_count": len(rrows),
        "task_id_overlap_count": len(ids),
        "task_id_overlap": ids,
        "digest_overlap_count": len(pairs),
        "digest_overlap": pairs,
        "caveat": CAVEAT,
    }
    if out is not None:
        from benchflow.util.atomic import write_json

        write_json(out, report)
    return report
