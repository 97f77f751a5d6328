"""Export a task to the legacy split layout (``bench export`` / ``bench tasks export``).

The output is what task.toml runners (Harbor, Terminal-Bench) read:
``task.toml`` (``sandbox`` spelled ``[environment]`` again, unknown keys kept
by ``bench import`` put back), ``instruction.md``, ``environment/``,
``tests/`` from the verifier and ``solution/`` from the oracle. Beside it,
``compatibility/export-report.json`` lists what the split layout cannot
carry (roles, scenes, the simulated user, BenchFlow-only settings) with the
sha256 of every input and output file; ``status`` is ``degraded`` as soon as
one entry is a real loss.

The export is assembled in a scratch folder beside the destination and renamed
into place as a whole, so a reader never sees half an export. The exported
``task.toml`` is parsed back before that; a setting that does not survive
becomes a loss entry.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from benchflow.errors import TaskError, UserError
from benchflow.util import atomic

if TYPE_CHECKING:
    from benchflow.tasks import Task, TaskConfig

TARGETS = {"task-toml": "harbor", "harbor": "harbor"}
"""``--target`` spellings -> the name recorded in the report."""
REPORT_PATH = "compatibility/export-report.json"
_SKIP_TOP = {"task.md", "task.toml", "instruction.md", "prompts", "environment", "compatibility",
             "verifier", "tests", "oracle", "solution", ".git"}
_RENAMES = (("sandbox", "environment"), ("sandbox_mode", "environment_mode"))


@dataclass
class Loss:
    """One thing the split layout does not carry (``loss``) or carries differently (``warning``)."""

    path: str
    reason: str
    severity: Literal["loss", "warning"] = "loss"


@dataclass
class ExportReport:
    """The content of ``compatibility/export-report.json``."""

    target: str
    source_task_dir: str
    selected_entrypoint: str
    selected_prompt: str
    selected_oracle_dir: str | None
    selected_verifier_dir: str | None
    emitted_files: list[str] = field(default_factory=list)
    input_hashes: dict[str, str] = field(default_factory=dict)
    output_hashes: dict[str, str] = field(default_factory=dict)
    restored_extension_paths: list[str] = field(default_factory=list)
    losses: list[Loss] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "degraded" if any(loss.severity == "loss" for loss in self.losses) else "lossless"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {"target": data.pop("target"), "status": self.status, **data}


def _hashes(root: Path) -> dict[str, str]:
    from benchflow.tasks.digest import task_files
    from benchflow.util.files import sha256_digest

    return {rel: sha256_digest(full).hex() for rel, full in task_files(root)
            if not rel.startswith("compatibility/")}


def _rel(task_dir: Path, path: Path) -> str | None:
    return path.relative_to(task_dir).as_posix() if path.is_dir() else None


def _merge_missing(base: dict[str, Any], extra: dict[str, Any]) -> None:
    """Put ``extra`` into ``base`` without overwriting anything ``base`` already has."""
    for key, value in extra.items():
        if key not in base:
            base[key] = value
        elif isinstance(base[key], dict) and isinstance(value, dict):
            _merge_missing(base[key], value)


def _legacy_spelling(table: dict[str, Any]) -> None:
    for new, old in _RENAMES:
        if new in table:
            table[old] = table.pop(new)


def _drop_nulls(value: Any, where: str, losses: list[Loss]) -> Any:
    """TOML has no null: an unset (None) key is left out; a null inside a list is a loss."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v, f"{where}{k}.", losses) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        if any(item is None for item in value):
            losses.append(Loss(where.rstrip("."), "TOML cannot hold null list items; they are left out"))
        return [_drop_nulls(v, f"{where}{i}.", losses) for i, v in enumerate(value) if v is not None]
    return value


def task_toml_data(document: dict[str, Any], losses: list[Loss]) -> tuple[dict[str, Any], list[str]]:
    """The task.toml mapping of a (normalized) document, and the compat paths put back."""
    from benchflow.tasks.config import CONFIG_KEYS

    data = {k: v for k, v in document.items() if k in CONFIG_KEYS}
    data = _drop_nulls(data, "", losses)
    version = data.pop("schema_version", data.pop("version", None))
    if "oracle" in data:
        data["solution"] = data.pop("oracle")
    compat = ((document.get("benchflow") or {}).get("compat") or {})
    restored: list[str] = []
    if isinstance(compat.get("extra"), dict):
        _merge_missing(data, compat["extra"])
        restored = [str(p) for p in compat.get("extra_paths") or []]
    _legacy_spelling(data)
    if isinstance(data.get("verifier"), dict):
        _legacy_spelling(data["verifier"])
    for step in data.get("steps") or []:
        if isinstance(step, dict) and isinstance(step.get("verifier"), dict):
            _legacy_spelling(step["verifier"])
    if version is not None:
        data = {"version": str(version), **data}
    return data, restored


def document_losses(task: Task) -> list[Loss]:
    """What the task.md document holds that task.toml + instruction.md cannot."""
    from benchflow.tasks import parse_task_md, split_sections
    from benchflow.tasks.roles import read_sidecars

    doc, losses = task.document, []
    if (doc.get("agents") or {}).get("roles"):
        losses.append(Loss("agents.roles", "task.toml has no roles; the role agents and their settings are dropped"))
    if doc.get("scenes"):
        losses.append(Loss("scenes", "task.toml has no scenes; only the single-agent prompt is exported"))
    if doc.get("user"):
        losses.append(Loss("user", "task.toml has no simulated user; its settings are dropped"))
    sections: dict[str, Any] = {"roles": {}, "scenes": {}, "user_persona": None}
    if task.layout == "task-md":
        sections = split_sections(parse_task_md(task.paths.task_md.read_text(encoding="utf-8"))[1])
    sidecars = read_sidecars(task.path)
    for kind in ("role", "scene"):
        for name in sorted({**sections[kind + "s"], **sidecars[kind + "s"]}):
            losses.append(Loss(f"## {kind}:{name}", f"the {kind} prompt '{name}' has no place in instruction.md"))
    if sections["user_persona"] is not None or sidecars["user_persona"] is not None:
        losses.append(Loss("## user-persona", "the simulated user's persona has no place in instruction.md"))
    for key in sorted(doc.get("benchflow") or {}):
        if key != "compat":
            losses.append(Loss(f"benchflow.{key}", "BenchFlow-only setting; task.toml runners ignore it",
                               "warning"))
    return losses


def layout_losses(task: Task) -> list[Loss]:
    """Alias collisions and verifier documents the split layout handles differently."""
    root, paths, losses = task.path, task.paths, []
    for native, legacy in (("oracle", "solution"), ("verifier", "tests")):
        if (root / native).is_dir() and (root / legacy).is_dir():
            used = (paths.oracle_dir if native == "oracle" else paths.verifier_dir).name
            losses.append(Loss(f"{native}|{legacy}", f"both {native}/ and {legacy}/ exist; only {used}/ "
                               f"(the one BenchFlow uses) is exported as {legacy}/", "warning"))
    if task.layout == "task-md":
        for name in ("task.toml", "instruction.md"):
            if (root / name).is_file():
                losses.append(Loss(f"task.md|{name}", f"{name} beside task.md is ignored; the exported "
                                   f"{name} is generated from task.md", "warning"))
    if paths.verifier_md.is_file():
        if paths.test_path.is_file():
            losses.append(Loss("verifier.verifier_md", "task.toml runners run tests/test.sh and ignore "
                               "verifier.md (its strategies, rubric and outputs)", "warning"))
        else:
            losses.append(Loss("verifier.verifier_md", "the verifier is declared only in verifier.md; task.toml "
                               "runners need tests/test.sh, which this task does not have"))
    return losses


def _config_losses(staged: Path, config: TaskConfig) -> list[Loss]:
    from benchflow.tasks import read_legacy
    from benchflow.tasks.migrate import first_difference

    try:
        exported = read_legacy(staged).config
    except TaskError as exc:
        return [Loss("task.toml", f"the exported task.toml does not load back: {exc}")]
    diff = first_difference(config.model_dump(mode="json"), exported.model_dump(mode="json"))
    return [] if diff is None else [Loss(diff, "this setting does not survive the task.toml layout")]


def _stage(task: Task, staging: Path, report: ExportReport) -> None:
    import tomli_w

    data, report.restored_extension_paths = task_toml_data(task.document, report.losses)
    try:
        atomic.write_text(staging / "task.toml", tomli_w.dumps(data))
    except (TypeError, ValueError) as exc:
        raise TaskError(f"task.md: a setting cannot be written as TOML ({exc}); "
                        "simplify that value and export again") from None
    atomic.write_text(staging / "instruction.md", task.instruction + "\n")
    copies = [(task.paths.environment_dir, "environment"), (task.paths.verifier_dir, "tests"),
              (task.paths.oracle_dir, "solution")]
    used = {src.resolve() for src, _ in copies}
    for entry in sorted(task.path.iterdir()):
        if entry.name not in _SKIP_TOP and entry.resolve() not in used:
            copies.append((entry, entry.name))
    for src, name in copies:
        if src.is_dir() and not src.is_symlink():
            shutil.copytree(src, staging / name, symlinks=True)
        elif src.exists() or src.is_symlink():
            shutil.copy2(src, staging / name, follow_symlinks=False)
    report.losses += _config_losses(staging, task.config)
    report.output_hashes = _hashes(staging)
    report.emitted_files = sorted([*report.output_hashes, REPORT_PATH])


def _check_destination(task_dir: Path, output: Path, overwrite: bool) -> None:
    out, src = output.resolve(), task_dir.resolve()
    if out == src or src.is_relative_to(out) or out.is_relative_to(src):
        raise UserError(f"{output}: overlaps the task folder {task_dir}; export to a folder outside it")
    if output.exists() and not output.is_dir():
        raise UserError(f"{output}: exists and is not a folder; choose another OUTPUT_DIR")
    if output.is_dir() and any(output.iterdir()):
        if not overwrite:
            raise UserError(f"{output}: already exists; pass --overwrite to replace it")
        if not ((output / REPORT_PATH).is_file() or (output / "task.toml").is_file()):
            raise UserError(f"{output}: is not an earlier export (no {REPORT_PATH} or task.toml); "
                            "refusing to replace it, choose an empty or new OUTPUT_DIR")


def export_task(path: str | os.PathLike[str], output_dir: str | os.PathLike[str] | None = None, *,
                target: str = "task-toml", overwrite: bool = False, report_only: bool = False) -> ExportReport:
    """Export the task at ``path`` to ``output_dir`` and return the loss report.

    Args:
        target: ``task-toml`` (alias ``harbor``), the only layout there is.
        overwrite: replace an existing earlier export at ``output_dir``.
        report_only: compute the report without writing anything.

    Raises:
        UserError: bad target, missing/overlapping/occupied ``output_dir``.
        TaskError: the task does not load.
    """
    from benchflow.tasks import load_task

    if target not in TARGETS:
        raise UserError(f"--target {target!r} is not a known layout; use 'task-toml' (alias 'harbor')")
    if report_only and output_dir is not None:
        raise UserError("OUTPUT_DIR is not used with --report-only (nothing is written); drop one of them")
    if not report_only and output_dir is None:
        raise UserError("OUTPUT_DIR is missing; give the folder to write the export to, or pass --report-only")
    task = load_task(path)
    if output_dir is not None:
        _check_destination(task.path, Path(output_dir), overwrite)
    paths = task.paths
    report = ExportReport(
        target=TARGETS[target], source_task_dir=str(task.path),
        selected_entrypoint="task.md" if task.layout == "task-md" else "task.toml",
        selected_prompt=_prompt_source(task),
        selected_oracle_dir=_rel(task.path, paths.oracle_dir),
        selected_verifier_dir=_rel(task.path, paths.verifier_dir),
        input_hashes=_hashes(task.path),
        losses=document_losses(task) + layout_losses(task),
    )
    if report_only:
        with tempfile.TemporaryDirectory(prefix="bench-export-") as scratch:
            _stage(task, Path(scratch), report)
        return report
    _publish(task, Path(output_dir), report)  # type: ignore[arg-type]
    return report


def _prompt_source(task: Task) -> str:
    if task.layout != "task-md":
        return "instruction.md"
    from benchflow.tasks import parse_task_md, split_sections

    body = parse_task_md(task.paths.task_md.read_text(encoding="utf-8"))[1]
    return "task.md#prompt" if split_sections(body)["has_prompt_section"] else "task.md body"


def _publish(task: Task, output: Path, report: ExportReport) -> None:
    """Stage beside ``output``, then swap it into place (the old export is removed last)."""
    try:
        staging = atomic.staging_folder(output, ".export")
    except OSError as exc:
        raise UserError(f"{output}: cannot write the export there ({exc.strerror}); "
                        "pick an OUTPUT_DIR you can write to") from None
    with atomic.swap_in_when_done(staging, output):
        _stage(task, staging, report)
        atomic.write_json(staging / REPORT_PATH, report.to_json())
