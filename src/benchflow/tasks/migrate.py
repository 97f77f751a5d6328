"""Convert tasks into canonical ``task.md``: ``bench import`` / ``bench tasks migrate`` and ``normalize``.

Migration renders the author's task.toml keys (after the Harbor renames) as
YAML frontmatter and instruction.md as the ``## prompt`` section. Before
anything is written the rendered document is parsed back the way ``bench run``
will read it; unless it yields the same TaskConfig and the same instruction
the conversion is refused, with the first difference as the reason.
Unknown task.toml keys are kept under ``benchflow.compat`` so ``bench export``
can restore them.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from benchflow.errors import TaskError, UserError
from benchflow.util import atomic

if TYPE_CHECKING:
    from benchflow.tasks import TaskConfig

_ALIAS_DIRS = (("tests", "verifier"), ("solution", "oracle"))


@dataclass
class MigrateResult:
    """What :func:`migrate_task` did."""

    task_md: Path
    preserved_extra: list[str] = field(default_factory=list)
    """Dotted paths of unknown task.toml keys kept under ``benchflow.compat``."""
    removed: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class NormalizeResult:
    """The canonical text, and where it was written (None: the caller prints it)."""

    text: str
    written: Path | None = None


def _task_dir(path: str | os.PathLike[str]) -> Path:
    task_dir = Path(path)
    if not task_dir.is_dir():
        raise UserError(f"{path}: not a folder; give the path of a task folder")
    return task_dir


@dataclass
class Draft:
    """A rendered task.md and what it must reproduce when parsed back."""

    text: str
    config: TaskConfig
    """What task.toml parses to."""
    instruction: str
    compat: dict[str, Any] | None
    """``benchflow.compat``: the unknown task.toml keys set aside."""


def _require_legacy(task_dir: Path) -> None:
    for name in ("task.toml", "instruction.md"):
        if not (task_dir / name).is_file():
            raise TaskError(f"{task_dir / name}: missing; bench import converts a task.toml + instruction.md "
                            "task (a task.md task needs no import)")


def render_migrated(task_dir: Path) -> Draft:
    """The task.md of the legacy task at ``task_dir``, not yet verified or written.

    Raises:
        TaskError: task.toml or instruction.md is missing, does not parse, or
            has a value YAML cannot carry.
    """
    from benchflow.tasks import read_legacy, render_task_md
    from benchflow.tasks.document import escape_headings

    _require_legacy(task_dir)
    legacy = read_legacy(task_dir)
    try:
        instruction = (task_dir / "instruction.md").read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        raise TaskError("instruction.md: is not UTF-8 text; save it as UTF-8") from None
    if not instruction:
        raise TaskError("instruction.md: is empty; write the task's instruction in it before importing")

    declared = dict(legacy.declared)
    declared.pop("schema_version", None)
    if "solution" in declared:  # the native spelling; both parse to the same config
        declared["oracle"] = declared.pop("solution")
    frontmatter: dict[str, Any] = {"schema_version": legacy.config.schema_version, **declared}
    compat = None
    if legacy.compat:
        compat = {"source": "legacy", "extra_paths": list(legacy.compat.get("extra_paths") or []),
                  "extra": legacy.compat.get("extra") or {}}
        frontmatter["benchflow"] = {"compat": compat}
    body = "## prompt\n\n" + escape_headings(instruction) + "\n"
    try:
        text = render_task_md(frontmatter, body)
    except yaml.YAMLError as exc:
        raise TaskError(f"task.toml: a value cannot be written as YAML ({exc}); "
                        "replace TOML times/dates in it with strings, then import again") from None
    return Draft(text=text, config=legacy.config, instruction=instruction, compat=compat)


def first_difference(left: Any, right: Any, where: str = "") -> str | None:
    """Dotted path of the first place two JSON-like values differ (None when equal)."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in list(left) + [k for k in right if k not in left]:
            if key not in left or key not in right:
                return f"{where}{key}"
            found = first_difference(left[key], right[key], f"{where}{key}.")
            if found:
                return found
        return None
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for i, (a, b) in enumerate(zip(left, right)):
            found = first_difference(a, b, f"{where}{i}.")
            if found:
                return found
        return None
    return None if left == right else (where.rstrip(".") or "(root)")


def verify_round_trip(draft: Draft) -> None:
    """Parse the draft as a task.md in a scratch folder; refuse unless config, instruction
    and the set-aside unknown keys all come back unchanged.

    Raises:
        TaskError: naming the first field that would change.
    """
    from benchflow.tasks import load_task

    with tempfile.TemporaryDirectory(prefix="bench-import-") as scratch:
        atomic.write_text(Path(scratch) / "task.md", draft.text)
        try:
            parsed = load_task(scratch)
        except TaskError as exc:
            raise TaskError(f"refusing to import: the converted task.md would not load ({exc})") from None
    before = {**draft.config.model_dump(mode="json"), "benchflow": {"compat": draft.compat}}
    after = {**parsed.config.model_dump(mode="json"),
             "benchflow": {"compat": (parsed.document.get("benchflow") or {}).get("compat")}}
    diff = first_difference(before, after)
    if diff is not None:
        raise TaskError(f"refusing to import: task.md would change '{diff}' "
                        f"({_at(before, diff)!r} -> {_at(after, diff)!r}); the conversion would be lossy")
    if parsed.instruction != draft.instruction:
        raise TaskError("refusing to import: task.md would not reproduce instruction.md exactly "
                        "(it holds text that reads as a reserved '## prompt/role/scene' heading); "
                        "reword those lines and import again")


def _at(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def migrate_task(path: str | os.PathLike[str], *, overwrite: bool = False,
                 remove_legacy: bool = False) -> MigrateResult:
    """Write ``task.md`` for the legacy task at ``path``, verified to load back the same.

    Args:
        overwrite: replace an existing task.md.
        remove_legacy: afterwards delete task.toml and instruction.md and rename
            ``tests/`` to ``verifier/`` and ``solution/`` to ``oracle/`` where
            the native folder does not exist yet.

    Raises:
        UserError: not a folder, or task.md exists without ``overwrite``.
        TaskError: the legacy files are missing or invalid, or the conversion is lossy.
    """
    task_dir = _task_dir(path)
    _require_legacy(task_dir)
    target = task_dir / "task.md"
    if target.exists() and not overwrite:
        raise UserError(f"{target}: already exists; pass --overwrite to replace it")
    draft = render_migrated(task_dir)
    verify_round_trip(draft)
    _write(target, draft.text)
    result = MigrateResult(task_md=target, preserved_extra=list((draft.compat or {}).get("extra_paths", [])))
    if remove_legacy:
        _remove_legacy(task_dir, result)
    return result


def _write(path: Path, text: str) -> Path:
    try:
        return atomic.write_text(path, text)
    except OSError as exc:
        raise UserError(f"{path}: cannot be written ({exc.strerror}); check the folder's permissions") from None


def _remove_legacy(task_dir: Path, result: MigrateResult) -> None:
    for name in ("task.toml", "instruction.md"):
        (task_dir / name).unlink()
        result.removed.append(name)
    for legacy, native in _ALIAS_DIRS:
        old, new = task_dir / legacy, task_dir / native
        if not old.is_dir() or old.is_symlink():
            continue
        if new.exists():
            result.warnings.append(f"{legacy}/ kept: {native}/ already exists and is the one used; "
                                   f"delete {legacy}/ once nothing in it is needed")
            continue
        old.rename(new)
        result.renamed.append((legacy, native))


def normalize_task(path: str | os.PathLike[str], *, output: str | os.PathLike[str] | None = None,
                   write: bool = False) -> NormalizeResult:
    """Canonical task.md of the task at ``path``: profiles and shorthands expanded.

    Args:
        output: write the text here (a folder gets ``task.md`` inside it).
        write: replace the task's own task.md.

    Raises:
        UserError: both ``output`` and ``write``, or not a folder.
        TaskError: no task.md, or a task.md that does not load.
    """
    from benchflow.tasks import (
        load_task,
        normalize_frontmatter,
        parse_task_md,
        render_task_md,
    )

    if output is not None and write:
        raise UserError("--output and --write both given; use --output FILE or --write (in place), not both")
    task_dir = _task_dir(path)
    source = task_dir / "task.md"
    if not source.is_file():
        hint = ("; convert it first with bench import" if (task_dir / "task.toml").is_file()
                else "; create a task with bench new NAME")
        raise TaskError(f"{source}: missing; bench tasks normalize works on task.md tasks{hint}")
    load_task(task_dir)  # the full validation, so a broken task is reported, not rewritten
    frontmatter, body = parse_task_md(source.read_text(encoding="utf-8"))
    text = render_task_md(normalize_frontmatter(frontmatter), body)
    if write:
        return NormalizeResult(text=text, written=_write(source, text))
    if output is not None:
        out = Path(output)
        if out.is_dir():
            out = out / "task.md"
        return NormalizeResult(text=text, written=_write(out, text))
    return NormalizeResult(text=text)
