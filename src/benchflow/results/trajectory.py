"""Paged reading of trajectory files: never more of a large JSONL in memory than one page.

``iter_trajectory`` streams the file line by line; only the lines of the
requested page are parsed. The total is the count of non-blank lines, found
in the same pass without parsing them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from benchflow.errors import JobFolderError
from benchflow.jobs.layout import TrialPaths

Kind = Literal["acp", "llm"]
MAX_PAGE = 5000


def trajectory_path(trial_path: str | Path, kind: str = "acp") -> Path:
    """The trajectory file of a trial folder (or ``trial_path`` itself when it is a file)."""
    path = Path(trial_path)
    if path.is_file():
        return path
    trial = TrialPaths(path)
    if kind == "acp":
        return trial.acp_trajectory
    if kind == "llm":
        return trial.llm_trajectory
    raise JobFolderError(f"trajectory kind {kind!r}: use acp (agent events) or llm (model exchanges)")


def iter_trajectory(trial_path: str | Path, kind: Kind = "acp", offset: int = 0,
                    limit: int = 200) -> tuple[list[dict[str, Any]], int]:
    """One page of trajectory events and the total number of events.

    Args:
        trial_path: a trial folder, or a trajectory JSONL file.
        kind: ``acp`` (trajectory/acp_trajectory.jsonl) or ``llm`` (trajectory/llm_trajectory.jsonl).
        offset: index of the first event returned (0-based, blank lines not counted).
        limit: at most this many events (capped at 5000).

    Returns:
        ``(events, total)``; a missing file is ``([], 0)``. A line that is not
        JSON comes back as ``{"type": "unparsed", "line": n, "text": <first 500 chars>}``.
    """
    path = trajectory_path(trial_path, kind)
    offset = max(0, int(offset))
    end = offset + max(0, min(int(limit), MAX_PAGE))
    events: list[dict[str, Any]] = []
    total = 0
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return [], 0
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            if offset <= total < end:
                events.append(_parse(line, number))
            total += 1
    return events, total


def _parse(line: bytes, number: int) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError:
        return {"type": "unparsed", "line": number, "text": line[:500].decode("utf-8", "replace")}
    return event if isinstance(event, dict) else {"type": "value", "line": number, "value": event}


def read_all(trial_path: str | Path, kind: Kind = "acp") -> list[dict[str, Any]]:
    """Every event of one trajectory (for ``--trajectories``, which asks for all of it)."""
    try:
        handle = open(trajectory_path(trial_path, kind), "rb")
    except FileNotFoundError:
        return []
    with handle:
        return [_parse(line, number) for number, line in enumerate(handle, 1) if line.strip()]
