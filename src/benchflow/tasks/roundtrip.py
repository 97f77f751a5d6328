"""The structural round trip of one task across the two layouts (``bench eval adopt --roundtrip-task``).

A converted benchmark's task has to mean the same in either layout, since Harbor-style runners read
``task.toml`` + ``instruction.md`` and BenchFlow reads ``task.md``. The task goes to the other layout
and back with BenchFlow's own converters (``bench import``'s :func:`~benchflow.tasks.migrate.migrate_task`,
``bench export``'s :func:`~benchflow.tasks.export.export_task`) in a scratch folder, and what comes back
is compared with the task as it is: the config, the instruction, and the files of ``environment/``, the
verifier and the oracle (by hash). Every difference, every refusal of a converter and every loss the
export reports is a mismatch; none means ``lossless``. Nothing is executed.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchflow.errors import TaskError, UserError


@dataclass(frozen=True)
class Mismatch:
    path: str
    reason: str


@dataclass
class RoundTripReport:
    """What came back different, if anything."""

    task_dir: str
    layout: str
    """The task's own layout (``task-md`` or ``task-toml``); the trip went to the other and back."""
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def status(self) -> Literal["lossless", "drift"]:
        return "drift" if self.mismatches else "lossless"

    def to_json(self) -> dict[str, Any]:
        return {"task_dir": self.task_dir, "layout": self.layout, "status": self.status,
                "mismatches": [asdict(m) for m in self.mismatches]}


def _file_map(folder: Path) -> dict[str, str]:
    from benchflow.tasks.digest import task_files
    from benchflow.util.files import sha256_hex

    return {rel: sha256_hex(full) for rel, full in task_files(folder)} if folder.is_dir() else {}


def _prompt(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _there_and_back(task: Any, scratch: Path, report: RoundTripReport) -> Path | None:
    """The folder of the task after the trip (None when a converter refused, recorded as a mismatch)."""
    from benchflow.tasks.export import export_task
    from benchflow.tasks.migrate import migrate_task

    native, split = scratch / "native", scratch / "split"
    try:
        if task.layout == "task-toml":
            shutil.copytree(task.path, native, symlinks=True)
            migrate_task(native, remove_legacy=True)
            export = export_task(native, split)
            back = split
        else:
            export = export_task(task.path, split)
            shutil.copytree(split, native, symlinks=True)
            shutil.rmtree(native / "compatibility", ignore_errors=True)
            migrate_task(native, remove_legacy=True)
            back = native
    except TaskError as exc:
        report.mismatches.append(Mismatch("task", f"the conversion refused it: {exc}"))
        return None
    report.mismatches += [Mismatch(loss.path, loss.reason) for loss in export.losses if loss.severity == "loss"]
    return back


def roundtrip_task(task_dir: str | Path) -> RoundTripReport:
    """Take the task at ``task_dir`` to the other layout and back; report what changed.

    Raises:
        UserError: ``task_dir`` is not a folder.
    """
    from benchflow.tasks.migrate import first_difference
    from benchflow.tasks.model import load_task

    source = Path(task_dir)
    if not source.is_dir():
        raise UserError(f"{task_dir}: not a folder; give --roundtrip-task the path of one converted task")
    report = RoundTripReport(task_dir=str(source), layout="task-md" if (source / "task.md").is_file()
                             else "task-toml")
    try:
        task = load_task(source)
    except TaskError as exc:
        report.mismatches.append(Mismatch("task", f"does not load: {exc}"))
        return report
    with tempfile.TemporaryDirectory(prefix="bench-roundtrip-") as scratch:
        back_dir = _there_and_back(task, Path(scratch), report)
        if back_dir is None:
            return report
        try:
            back = load_task(back_dir)
        except TaskError as exc:
            report.mismatches.append(Mismatch("task", f"does not load after the trip: {exc}"))
            return report
        diff = first_difference(task.config.model_dump(mode="json"), back.config.model_dump(mode="json"))
        if diff is not None:
            report.mismatches.append(Mismatch(f"config.{diff}", "the setting changed on the way back"))
        if _prompt(task.instruction) != _prompt(back.instruction):
            report.mismatches.append(Mismatch("instruction", "the instruction text changed on the way back"))
        for label, before, after in (("environment/", task.paths.environment_dir, back.paths.environment_dir),
                                     ("verifier", task.paths.verifier_dir, back.paths.verifier_dir),
                                     ("oracle", task.paths.oracle_dir, back.paths.oracle_dir)):
            if _file_map(before) != _file_map(after):
                report.mismatches.append(Mismatch(label, "its files differ (by name or content) on the way back"))
    return report
