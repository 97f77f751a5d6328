"""``load_trial``: one trial folder as a ``benchflow.trial`` document."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchflow.errors import JobFolderError, UserError
from benchflow.jobs.layout import TrialPaths
from benchflow.util import nofollow
from benchflow.records import TrialConfig, TrialResult, TrialTiming, Unreadable, read_json, read_optional

from . import trajectory
from .documents import TrialDocument
from .reader import is_trial_dir, require_dir, summarize
from .turns import conversations

VERIFIER_TEXT_CAP = 64 * 1024
"""Bytes of each verifier file kept in the document (the tail is what explains a failure)."""
MAX_LISTED_FILES = 2000


def _tail_text(path: Path, root: Path, cap: int = VERIFIER_TEXT_CAP) -> str | None:
    """The file as text, or its last ``cap`` bytes with a marker; ``None`` for binary files and links."""
    try:
        with nofollow.open_file(path, root) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > cap:
                handle.seek(size - cap)
            data = handle.read(cap)
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None
    text = data.decode("utf-8", "replace")
    return f"[… first {size - cap} bytes left out …]\n{text}" if size > cap else text


def verifier_files(trial: TrialPaths) -> dict[str, str]:
    """``verifier/`` text files (reward.txt, test-stdout.txt, ctrf.json, …), each capped."""
    out: dict[str, str] = {}
    folder = trial.verifier_dir
    if not folder.is_dir():
        return out
    for path in sorted(p for p in folder.rglob("*") if nofollow.is_regular(p)):
        text = _tail_text(path, folder)
        if text is not None:
            out[path.relative_to(folder).as_posix()] = text
    return out


def list_files(trial: TrialPaths) -> list[str]:
    files: list[str] = []
    for path in sorted(trial.root.rglob("*")):
        if nofollow.is_regular(path):
            files.append(path.relative_to(trial.root).as_posix())
            if len(files) >= MAX_LISTED_FILES:
                break
    return files


def _optional(path: Path, notes: list[str]) -> Any:
    try:
        return read_json(path)
    except Unreadable as exc:
        notes.append(str(exc))
        return None


def load_trial(path: str | Path, *, verifier: bool = True, trajectories: bool = False) -> TrialDocument:
    """Read one trial folder: summary, records, verifier output, regrade block, file list.

    Trajectories are included only with ``trajectories=True``; use
    :func:`iter_trajectory` to page through them instead.

    Raises:
        JobFolderError: ``path`` is not a trial folder (exit 2).
    """
    path = Path(path)
    require_dir(path, "a trial folder (<task>__<id> with result.json or config.json)")
    if not is_trial_dir(path):
        raise JobFolderError(f"{path}: not a trial folder (no result.json or config.json); "
                             "give a <task>__<id> folder inside a job")
    trial = TrialPaths(path)
    notes: list[str] = []
    result = read_optional(TrialResult, trial.result, notes, name=trial.name)
    config = read_optional(TrialConfig, trial.config, notes, name=trial.name)
    if result is None:
        notes.append(f"{trial.result}: missing; the trial did not finish")
    prompts = _optional(trial.prompts, notes)
    prompts = prompts if isinstance(prompts, list) else None
    instruction = prompts[0] if prompts and isinstance(prompts[0], str) else None
    timing = read_optional(TrialTiming, trial.timing, notes)
    if timing is None and result is not None:
        timing = result.timing
    regrade = _optional(trial.regrade, notes)
    details = _optional(trial.reward_details, notes)
    trajs = None
    if trajectories:
        trajs = {"acp": trajectory.read_all(path, "acp"), "llm": trajectory.read_all(path, "llm")}
    summary = summarize(trial, result, config, path.parent.name, notes)
    branches, talks = _branches(trial, notes), conversations(trial, notes)
    return TrialDocument(
        path=str(path), name=trial.name, summary=summary,
        config=config.to_json() if config else None, result=result.to_json() if result else None,
        timing=timing.model_dump(mode="json") if timing else None, prompts=prompts, instruction=instruction,
        verifier_files=verifier_files(trial) if verifier else {}, reward_details=details,
        regrade=regrade if isinstance(regrade, dict) else None, files=list_files(trial),
        notes=list(dict.fromkeys(notes)),
        trajectories=trajs, branches=branches, conversations=talks,
    )


def _branches(trial: TrialPaths, notes: list[str]) -> dict[str, Any] | None:
    """The branch view of a trial with a tree.json (None without one; an unreadable one is a note)."""
    if not trial.tree.is_file():
        return None
    from benchflow.branch.view import branch_view

    try:
        return branch_view(trial)
    except (UserError, Unreadable) as exc:
        notes.append(f"tree.json: {exc}")
        return None
