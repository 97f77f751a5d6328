"""``check_task``: the static check levels of contracts §1.10.

Levels are cumulative: ``schema`` < ``structural`` < ``runtime-capability``
(needs a sandbox) < ``publication-grade`` < ``acceptance`` (the static evidence
of ``evidence.py``). The levels that run the task
(acceptance-live, equivalence) live in ``benchflow.checks.levels`` (they need the
run engine, which the task model never imports); ``check_task`` refuses them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.errors import ConfigError, TaskError

from .capability import RuntimePicker, RuntimeTarget, runtime_issues
from .discovery import is_task_dir
from .document import parse_task_md, split_sections
from .legacy import read_legacy
from .model import PLACEHOLDER, Task, config_issues, load_task
from .profiles import normalize_frontmatter
from .roles import document_issues
from .rubric import rubric_issues
from .task_env import env_problems
from .verifier_doc import load_verifier_md, strategy_files

CHECK_LEVELS = ("schema", "structural", "runtime-capability", "publication-grade", "acceptance")
LIVE_LEVELS = ("acceptance-live", "equivalence")
RUBRIC_SUFFIXES = (".md", ".toml", ".yaml", ".yml", ".json")


@dataclass
class CheckReport:
    """What ``check_task`` found: issues fail the check, warnings do not."""

    path: Path
    level: str
    issues: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sandbox: str | None = None
    """The sandbox the task was judged against, and why it was chosen; None: none was."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def ok(self) -> bool:
        return not self.issues


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _schema_issues(task_dir: Path, report: CheckReport) -> None:
    """Every schema problem of a task that did not load (load_task stops at the first)."""
    issues = report.issues
    try:
        if (task_dir / "task.md").is_file():
            text = _read(task_dir / "task.md")
            if text is None:
                issues.append("task.md: cannot be read as UTF-8 text; save it as UTF-8")
                return
            frontmatter, body = parse_task_md(text)
            document = normalize_frontmatter(frontmatter)
            issues += config_issues(document)[1] + document_issues(document, "task.md")[1]
            if not issues:
                split_sections(body)
        else:
            read_legacy(task_dir)
    except TaskError as exc:
        issues += exc.problems


def _schema(task_dir: Path, report: CheckReport) -> Task | None:
    """The schema level; returns the loaded task when it passes."""
    if not is_task_dir(task_dir):
        report.issues.append(f"{task_dir}: not a task folder (no task.md or task.toml); "
                             "create one with bench new NAME")
        return None
    try:
        task = load_task(task_dir)
    except TaskError as exc:
        _schema_issues(task_dir, report)
        if not report.issues:
            report.issues.append(str(exc))
        return None
    report.warnings += task.warnings
    prompt_file = "task.md" if task.layout == "task-md" else "instruction.md"
    if PLACEHOLDER in (_read(task_dir / prompt_file) or ""):
        report.issues.append(f"{prompt_file}: still contains a '{PLACEHOLDER} …]' placeholder; replace it")
        return None
    return task


def _file_map(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _alias_drift(task_dir: Path) -> list[str]:
    out = []
    for native, legacy in (("verifier", "tests"), ("oracle", "solution")):
        a, b = task_dir / native, task_dir / legacy
        if a.is_dir() and b.is_dir() and _file_map(a) != _file_map(b):
            out.append(f"{native}/ and {legacy}/: compatibility alias drift, both exist and differ "
                       f"({native}/ is used); delete {legacy}/ or make it identical")
    if (task_dir / "task.md").is_file() and \
            (task_dir / "task.toml").is_file() != (task_dir / "instruction.md").is_file():
        half = "task.toml" if (task_dir / "task.toml").is_file() else "instruction.md"
        out.append(f"{half}: compatibility alias drift, an incomplete split layout beside task.md; "
                   "delete it (task.md is authoritative)")
    return out


def _verifier_issues(task: Task) -> list[str]:
    paths = task.paths
    vdir = paths.verifier_dir
    rel = vdir.relative_to(task.path).as_posix()
    if not vdir.exists() and task.layout == "task-md" and rel == "tests":
        rel = "verifier"  # name the native folder when neither spelling exists
    if not vdir.is_dir() or not any(vdir.iterdir()):
        return [f"{rel}/: missing or empty; add {rel}/test.sh that writes /logs/verifier/reward.txt"]
    out: list[str] = []
    if paths.verifier_md.is_file():
        try:
            doc, _raw, _roles = load_verifier_md(paths.verifier_md)
        except TaskError as exc:
            return [str(exc)]
        selected = doc.verifier.selected
        if selected is None:
            if not paths.test_path.is_file():
                out.append(f"{rel}/verifier.md: declares no strategy and {rel}/test.sh is missing; "
                           "add a strategy or test.sh")
        else:
            name, strategy = selected
            for needed in map(posixpath.normpath, strategy_files(strategy)):
                if not (vdir / needed).is_file():
                    out.append(f"{rel}/{needed}: missing, but strategy '{name}' needs it; add the file")
    elif not paths.test_path.is_file():
        out.append(f"{rel}/test.sh: missing; add a test.sh that writes /logs/verifier/reward.txt")
    if task.config.verifier.type == "llm-judge" and not paths.verifier_md.is_file():
        rubric = task.config.verifier.judge.rubric_path
        if not (task.path / rubric).is_file():
            out.append(f"{rubric}: missing, but verifier.type is llm-judge; add the rubric")
    for path in sorted(vdir.rglob("*")):
        if path.is_file() and PLACEHOLDER in (_read(path) or ""):
            out.append(f"{path.relative_to(task.path).as_posix()}: still contains a "
                       f"'{PLACEHOLDER} …]' placeholder; replace it")
    if (vdir / "rubric.json").is_file():
        out += rubric_issues(vdir / "rubric.json")
    return out


def _structural(task: Task) -> list[str]:
    out: list[str] = []
    paths = task.paths
    if not paths.environment_dir.is_dir():
        out.append("environment/: missing; add environment/Dockerfile that builds the task's sandbox")
    elif not paths.dockerfile.is_file():
        out.append("environment/Dockerfile: missing; add one (it is required even with docker-compose)")
    out += _alias_drift(task.path)
    out += _verifier_issues(task)
    solve = paths.solve_path
    if solve.is_file() and PLACEHOLDER in (_read(solve) or ""):
        out.append(f"{solve.relative_to(task.path).as_posix()}: still the placeholder oracle; "
                   "write the reference solution")
    return out


def _publication(task: Task) -> list[str]:
    d = task.path
    out: list[str] = []
    if task.layout != "task-md":
        out.append("task.toml: publication needs the native task.md layout; run bench import")
    package = task.config.task
    if package is not None and not package.is_package_name:
        out.append(f"task.name {package.name!r}: a published task is named org/name (letters, digits, '.', '_', "
                   "'-'; no '..'); rename it")
    for legacy in ("task.toml", "instruction.md"):
        if task.layout == "task-md" and (d / legacy).exists():
            out.append(f"{legacy}: remove it; a published task keeps only task.md")
    for native, legacy in (("oracle", "solution"), ("verifier", "tests")):
        if (d / legacy).exists():
            out.append(f"{legacy}/: rename it to {native}/ for publication")
    oracle = d / "oracle"
    if not oracle.is_dir() or not any(oracle.iterdir()):
        out.append("oracle/: missing or empty; add oracle/solve.sh with the reference solution")
    vmd = d / "verifier" / "verifier.md"
    if not vmd.is_file():
        out.append("verifier/verifier.md: missing; declare the verifier's rubric and outputs")
    else:
        try:
            doc, raw, _ = load_verifier_md(vmd)
        except TaskError as exc:
            out.append(str(exc))
        else:
            if not doc.verifier.rubric.dimensions:
                out.append("verifier/verifier.md: declare verifier.rubric.dimensions (at least one)")
            outputs = (raw.get("verifier") or {}).get("outputs") or {}
            if "reward_json" not in outputs:
                out.append("verifier/verifier.md: declare verifier.outputs.reward_json explicitly")
    rubrics = d / "verifier" / "rubrics"
    if not rubrics.is_dir() or not any(p.suffix in RUBRIC_SUFFIXES for p in rubrics.iterdir()):
        out.append("verifier/rubrics/: add at least one rubric file (.md, .toml, .yaml, .yml or .json)")
    return out


def check_task(path: str | Path, level: str = "structural", runtime: RuntimeTarget | RuntimePicker | None = None,
               allow_task_env: Iterable[str] = ()) -> CheckReport:
    """Check one task folder at ``level``; never raises for problems of the task itself.

    ``runtime`` is the sandbox the task is judged against (its capabilities, and what a run there
    would adapt), or a picker that chooses it for the loaded task; ``allow_task_env`` names the host variables the task may read
    (``--allow-task-env``), as a run would.

    Raises:
        ConfigError: an unknown level, a level that runs the task (see
            ``benchflow.checks.levels``), or runtime-capability without a sandbox.
    """
    if level in LIVE_LEVELS:
        raise ConfigError(f"--level {level}: runs the task in a sandbox, which check_task does not do; "
                          f"use bench tasks check --level {level} (benchflow.checks.levels.run_level)")
    if level not in CHECK_LEVELS:
        raise ConfigError(f"--level {level}: unknown level; use one of: {', '.join(CHECK_LEVELS + LIVE_LEVELS)}")
    if level == "runtime-capability" and runtime is None:
        raise ConfigError("--level runtime-capability needs --sandbox NAME (e.g. --sandbox docker)")
    task_dir = Path(path)
    report = CheckReport(path=task_dir, level=level)
    task = _schema(task_dir, report)
    if task is None or level == "schema":
        return report
    report.issues += _structural(task)
    report.issues += env_problems(task, allow_task_env)
    if runtime is not None and not isinstance(runtime, RuntimeTarget):
        runtime = runtime(task)
    if runtime is not None:
        report.sandbox = f"{runtime.name}, {runtime.why}"
        issues, warnings = runtime_issues(task, runtime.capabilities, runtime.name)
        refused, adapted = runtime.adaptations(task)
        report.issues += issues + refused
        report.warnings += warnings + adapted
    if level in ("publication-grade", "acceptance"):
        report.issues += _publication(task)
    if level == "acceptance":
        from .evidence import acceptance_issues

        report.issues += acceptance_issues(task.path, task.document)
    return report
