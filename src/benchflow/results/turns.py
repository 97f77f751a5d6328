"""A scene trial's turns and its simulated user's conversations, read back for ``bench results`` and ``bench view``.

A multi-role scene writes ``turns/<NN>-<role>/turn.json`` per turn and the
simulated user writes ``simulated-user.json`` (in the trial folder, or in each
turn's folder when the task has scenes); see :mod:`benchflow.scenes.runner` and
:mod:`benchflow.sim_user.user`. A trial without them costs two ``stat`` calls.
An unreadable record is a note, never an exception.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.records import Unreadable, read_json, read_optional
from benchflow.records.turns import TurnRecord

USER_FILE = "simulated-user.json"
TURNS_DIR = "turns"


def _user_brief(data: Any) -> dict[str, Any] | None:
    """``{model, rounds, max_rounds, stopped_by}`` of one ``simulated-user.json``."""
    if not isinstance(data, dict):
        return None
    rounds = data.get("rounds")
    return {"model": data.get("model"), "rounds": len(rounds) if isinstance(rounds, list) else 0,
            "max_rounds": data.get("max_rounds"), "stopped_by": data.get("stopped_by")}


def _read_user(path: Path, notes: list[str] | None) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except Unreadable as exc:
        if notes is not None:
            notes.append(str(exc))
        return None
    return data if isinstance(data, dict) else None


def _turn_folders(trial: TrialPaths) -> list[Path]:
    folder = trial.root / TURNS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and (p / "turn.json").is_file())


def read_turns(trial: TrialPaths, notes: list[str] | None = None) -> list[dict[str, Any]] | None:
    """Each turn in order: index, scene, role, agent, model, status, tool calls, tokens, cost, seconds,
    error, its folder (relative to the trial) and its simulated user's rounds; None without turns."""
    folders = _turn_folders(trial)
    if not folders:
        return None
    out = []
    for folder in folders:
        turn = read_optional(TurnRecord, folder / "turn.json", notes if notes is not None else [], name=trial.name)
        if turn is None:
            continue
        seconds = sum(turn.timing.values()) if turn.timing else None
        user = _user_brief(_read_user(folder / USER_FILE, notes))
        out.append({"index": turn.index, "scene": turn.scene, "role": turn.role, "agent": turn.agent,
                    "model": turn.model, "status": turn.status, "n_tool_calls": turn.n_tool_calls,
                    "total_tokens": turn.total_tokens, "cost_usd": turn.cost_usd,
                    "seconds": round(seconds, 1) if seconds is not None else None,
                    "error": turn.error, "error_category": turn.error_category,
                    "folder": f"{TURNS_DIR}/{folder.name}",
                    "has_trajectory": (folder / "trajectory").is_dir(),
                    "user_rounds": user["rounds"] if user else None,
                    "user_stopped_by": user["stopped_by"] if user else None})
    return out or None


def read_user(trial: TrialPaths, notes: list[str] | None = None) -> dict[str, Any] | None:
    """The trial-level simulated user in brief (``{model, rounds, max_rounds, stopped_by}``), or None."""
    return _user_brief(_read_user(trial.root / USER_FILE, notes))


def conversations(trial: TrialPaths, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """Every ``simulated-user.json`` of the trial in full, each with its ``folder`` ("." or ``turns/<NN>-<role>``)."""
    out = []
    for folder, label in [(trial.root, "."), *((f, f"{TURNS_DIR}/{f.name}") for f in _turn_folders(trial))]:
        data = _read_user(folder / USER_FILE, notes)
        if data is not None:
            out.append({"folder": label, **data})
    return out
