"""``bench traj export``: a trial or job folder written in another tool's format, redacted.

``atif``: one ATIF ``trajectory.json`` per trial (:mod:`.atif`); for a trial folder the file ``--out``
names (default ``<trial>.trajectory.json`` beside it), for a job folder one ``<trial>/trajectory.json``
per finished trial under the folder ``--out`` names (default ``<job>.atif/``). A trial without trajectory
events is left out of a job's export (and refused for a trial).

``inspect``: one Inspect eval log for the job (or the one trial) (:mod:`.inspect_log`), ``.eval`` or
``.json`` by the name ``--out`` gives (default ``<PATH>.eval``).

Every file is written atomically; nothing is written inside the folder read.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from benchflow.errors import JobFolderError, UserError
from benchflow.util import atomic

from . import atif
from .source import JobSource, read_source

Format = Literal["atif", "inspect"]
FORMATS: tuple[str, ...] = ("atif", "inspect")


class ExportReport(BaseModel):
    """What an export wrote and what it left out."""

    source: str
    format: str
    out: str
    written: list[str] = Field(default_factory=list)
    left_out: list[dict[str, str]] = Field(default_factory=list)


def default_out(path: Path, fmt: str, is_job: bool) -> Path:
    if fmt == "inspect":
        return path.parent / f"{path.name}.eval"
    return path.parent / (f"{path.name}.atif" if is_job else f"{path.name}.trajectory.json")


def export(path: str | Path, out: str | Path | None = None, *, fmt: str = "atif") -> ExportReport:
    """Write ``path`` (a job or trial folder) as ``fmt``; returns what was written.

    Raises:
        UserError: an unknown format, an output inside the folder read, or (inspect) no inspect_ai.
        JobFolderError: ``path`` is not a job or trial folder, the trial has not finished, or it has no
            trajectory to export (exit 2).
    """
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt}: use one of {', '.join(FORMATS)}")
    source = read_source(path)
    root = source.root.resolve()
    target = Path(out) if out else default_out(root, fmt, source.is_job)
    if target.resolve().is_relative_to(root):
        raise UserError(f"{target}: the export cannot be written inside the folder it reads; pass --out elsewhere")
    if fmt == "inspect" and target.suffix not in (".eval", ".json"):
        raise UserError(f"{target}: an Inspect log is a .eval or a .json file; name --out so")
    report = ExportReport(source=str(root), format=fmt, out=str(target), left_out=list(source.left_out))
    if fmt == "inspect":
        _write_inspect(source, target, report)
    elif source.is_job:
        _write_atif_job(source, target, report)
    else:
        atomic.write_json(target, atif.trajectory(source.trials[0]))
        report.written.append(str(target))
    return report


def _write_atif_job(source: JobSource, folder: Path, report: ExportReport) -> None:
    for trial in source.trials:
        if not trial.turns:
            report.left_out.append({"path": trial.name, "reason": "no trajectory events"})
            continue
        target = folder / trial.name / "trajectory.json"
        atomic.write_json(target, atif.trajectory(trial))
        report.written.append(str(target))
    if not report.written:
        raise JobFolderError(f"{source.root}: no finished trial has trajectory events; nothing to export")


def _write_inspect(source: JobSource, target: Path, report: ExportReport) -> None:
    from .inspect_log import eval_log, require_inspect

    log_module = require_inspect()
    if not source.trials:
        raise JobFolderError(f"{source.root}: no finished trials to export")
    log = eval_log(source)
    with tempfile.TemporaryDirectory(prefix="bench-export-") as scratch:  # Inspect writes a path; we rename
        staged = Path(scratch) / f"log{target.suffix}"
        log_module.write_eval_log(log, str(staged), format=target.suffix.lstrip("."))
        atomic.write_bytes(target, staged.read_bytes())
    report.written.append(str(target))
