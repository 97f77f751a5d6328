"""What raters compare: each finished trial's output folder, and rows of an ``--items`` file.

Outputs are hashed (:func:`tree_digest`) and copied under their opaque ids
(:func:`copy_output`) without following links: a trial's files are the
agent's and may try to point elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from benchflow.errors import ConfigError, JobFolderError
from benchflow.jobs.layout import JobPaths, TrialPaths
from benchflow.records import TrialConfig, TrialResult, Unreadable, read_record
from benchflow.results.reader import find_jobs, is_job_dir, is_trial_dir, task_name_of
from benchflow.util import nofollow

UNVERSIONED = "unversioned"
"""The task version of a trial that recorded no task digest."""


@dataclass(frozen=True)
class Found:
    task_id: str
    task_version: str
    source: Path
    agent: str | None = None
    model: str | None = None
    condition: str | None = None
    kind: str = "trial"
    trial_path: Path | None = None
    entry: str | None = None

    @property
    def arm(self) -> tuple[str | None, str | None, str | None]:
        return (self.agent, self.model, self.condition)


def relative_inside(value: str, flag: str) -> str:
    """``value`` as a relative path that stays inside its base, or a ConfigError."""
    p = PurePosixPath(value)
    if not value or p.is_absolute() or ".." in p.parts:
        raise ConfigError(f"{flag} {value!r}: give a path relative to the folder, without '..'")
    return p.as_posix()


def _trials(path: Path) -> list[TrialPaths]:
    if not path.exists():
        raise JobFolderError(f"{path}: no such folder; give job or trial folders")
    if is_trial_dir(path):
        return [TrialPaths(path)]
    jobs = [path] if is_job_dir(path) else find_jobs(path)
    if not jobs:
        raise JobFolderError(f"{path}: not a job or trial folder")
    return [t for job in jobs for t in JobPaths(job).trials()]


def trial_outputs(paths: list[Path], output: str, condition: str | None, entry: str | None,
                  notes: list[str]) -> list[Found]:
    """One :class:`Found` per finished trial whose output (and entry page) exists; the rest noted."""
    found: list[Found] = []
    for path in paths:
        for trial in _trials(path):
            try:
                result = read_record(TrialResult, trial.result, name=trial.root.name)
            except Unreadable:
                notes.append(f"{trial.root}: not finished (no readable result.json); left out")
                continue
            if result.error:
                notes.append(f"{trial.root}: the attempt errored; left out")
                continue
            source = trial.root / output
            if not (source.is_dir() or source.is_file()) or source.is_symlink():
                notes.append(f"{trial.root}: no {output}/ to compare; left out")
                continue
            if entry and not (source / entry).is_file():
                notes.append(f"{trial.root}: {output}/{entry} is missing; left out")
                continue
            config = None
            if not result.task_digest:
                try:
                    config = read_record(TrialConfig, trial.config, name=trial.root.name)
                except Unreadable:
                    config = None
            version = result.task_digest or (config.task_digest if config else None) or UNVERSIONED
            found.append(Found(task_id=task_name_of(trial, result, config), task_version=version,
                               source=source.resolve(), agent=result.agent or None, model=result.model or None,
                               condition=condition, trial_path=trial.root.resolve(), entry=entry))
    return found


def item_outputs(items_file: Path, trials: list[Found], entry: str | None, notes: list[str]) -> list[Found]:
    """Rows of an ``--items`` JSON-lines file: ``task``, ``output`` (relative to the file) and arm labels.

    A row without ``task_version`` takes the version of its task's trials (there must be exactly one).
    """
    try:
        lines = items_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--items {items_file}: cannot read it ({exc})") from exc
    versions: dict[str, set[str]] = {}
    for t in trials:
        versions.setdefault(t.task_id, set()).add(t.task_version)
    found: list[Found] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"--items {items_file}:{number}"
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{where}: not JSON ({exc})") from exc
        if not isinstance(row, dict) or not isinstance(row.get("task"), str) or not isinstance(row.get("output"), str):
            raise ConfigError(f"{where}: each row needs 'task' and 'output' (a folder or file, relative to the items file)")
        for key in ("agent", "model", "condition", "task_version"):
            if row.get(key) is not None and not isinstance(row[key], str):
                raise ConfigError(f"{where}: '{key}' must be text")
        version = row.get("task_version")
        if version is None:
            known = sorted(versions.get(row["task"], ()))
            if len(known) != 1:
                reason = "no trial of it" if not known else f"its trials ran {len(known)} versions"
                raise ConfigError(f"{where}: task {row['task']!r} has {reason}; give 'task_version'")
            version = known[0]
        source = (items_file.parent / row["output"]).resolve()
        if not (source.is_dir() or source.is_file()):
            raise ConfigError(f"{where}: output {row['output']!r} does not exist")
        if entry and not (source / entry).is_file():
            notes.append(f"{where}: {row['output']}/{entry} is missing; left out")
            continue
        kind = "golden" if row.get("golden") is True else "item"
        found.append(Found(task_id=row["task"], task_version=version, source=source, agent=row.get("agent"),
                           model=row.get("model"), condition=row.get("condition"), kind=kind, entry=entry))
    return found


def _files(root: Path) -> list[tuple[str, Path]]:
    if root.is_file():
        return [(root.name, root)]
    out = []
    for current, dirs, names in os.walk(root):
        dirs.sort()
        here = Path(current)
        for name in sorted(names):
            path = here / name
            if not path.is_symlink() and path.is_file():
                out.append((path.relative_to(root).as_posix(), path))
    return out


def tree_digest(root: Path) -> str:
    """``sha256:`` over the regular files under ``root`` (sorted paths; each path, NUL, content hash)."""
    h = hashlib.sha256()
    for rel, path in _files(root):
        with nofollow.open_file(path) as handle:
            inner = hashlib.file_digest(handle, "sha256").hexdigest()
        h.update(rel.encode() + b"\0" + inner.encode() + b"\n")
    return "sha256:" + h.hexdigest()


def copy_output(source: Path, dest: Path) -> None:
    """Copy the regular files of ``source`` (a folder, or one file) into ``dest``; links are left out."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel, path in _files(source):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with nofollow.open_file(path) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)

