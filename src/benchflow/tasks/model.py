"""The Task: one task folder loaded, validated and resolved, in either layout."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchflow.errors import TaskError

from .config import CONFIG_KEYS, TaskConfig
from .digest import task_digest
from .discovery import is_task_dir
from .document import parse_task_md, read_utf8, split_sections
from .legacy import read_legacy
from .paths import TaskPaths
from .profiles import normalize_frontmatter
from .roles import DOCUMENT_KEYS, build_prompt_parts, document_issues, read_sidecars
from .validation import RENAMES, did_you_mean, issues_of, summarize

SHORTHAND_KEYS = frozenset({"name", "image", "profile", "profiles"})
PLACEHOLDER = "[REPLACE:"


@dataclass
class Task:
    """A loaded task. ``config`` drives the run; ``document`` is the full normalized frontmatter."""

    path: Path
    layout: Literal["task-md", "task-toml"]
    config: TaskConfig
    instruction: str
    paths: TaskPaths
    document: dict[str, Any]
    roles: dict[str, dict] = field(default_factory=dict)
    scenes: list[dict] = field(default_factory=list)
    user_persona: str | None = None
    warnings: list[str] = field(default_factory=list)
    env_resolved: bool = False
    """The env maps hold filled values (``benchflow.tasks.task_env.resolve_task_env``), not templates."""
    compose_env: dict[str, str] = field(default_factory=dict)
    """Host variables ``--allow-task-env`` lets the task's docker-compose.yaml read (its ``${NAME}``)."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def prompt(self) -> str:
        """The instruction with ``agent.prompt_prefix`` prepended, as the agent receives it."""
        prefix = self.config.agent.prompt_prefix
        return f"{prefix}\n\n{self.instruction}" if prefix else self.instruction

    @property
    def has_user(self) -> bool:
        """The task declares a simulated user: a ``user:`` block or a persona (run by ``benchflow.sim_user``)."""
        return self.document.get("user") is not None or bool(self.user_persona)

    def digest(self) -> str:
        return task_digest(self.path)


def top_level_issues(document: dict[str, Any], source: str = "task.md") -> list[str]:
    """Unknown top-level keys of a normalized task.md frontmatter."""
    allowed = CONFIG_KEYS | DOCUMENT_KEYS
    out = []
    for key in document:
        if key in allowed:
            continue
        if key in RENAMES:
            out.append(f"{source}: '{key}:' is the task.toml spelling; in task.md rename it to "
                       f"'{RENAMES[key]}:'")
        else:
            hint = did_you_mean(key, allowed | SHORTHAND_KEYS)
            out.append(f"{source}: unknown key '{key}'{hint}; fix the spelling or remove it")
    return out


def config_issues(document: dict[str, Any], source: str = "task.md") -> tuple[TaskConfig | None, list[str]]:
    """Validate the TaskConfig part of a normalized frontmatter: (config or None, problems)."""
    from pydantic import ValidationError

    problems = top_level_issues(document, source)
    data = {k: v for k, v in document.items() if k in CONFIG_KEYS}
    try:
        config = TaskConfig.model_validate(data)
    except ValidationError as exc:
        return None, problems + issues_of(exc, source, TaskConfig)
    return (config if not problems else None), problems


def _load_task_md(task_dir: Path) -> Task:
    frontmatter, body = parse_task_md(read_utf8(task_dir / "task.md"))
    document = normalize_frontmatter(frontmatter)
    config, problems = config_issues(document)
    doc_model, doc_problems = document_issues(document, "task.md")
    problems += doc_problems
    if problems or config is None or doc_model is None:
        raise TaskError(summarize(problems))
    sections = split_sections(body)
    roles, scenes, persona = build_prompt_parts(doc_model, sections, read_sidecars(task_dir))
    if not sections["instruction"]:
        raise TaskError("task.md: the prompt is empty; write the instruction under '## prompt'")
    warnings = []
    if (task_dir / "task.toml").is_file() or (task_dir / "instruction.md").is_file():
        warnings.append("task.md is authoritative; task.toml/instruction.md beside it are ignored")
    return Task(path=task_dir, layout="task-md", config=config, instruction=sections["instruction"],
                paths=TaskPaths.resolve(task_dir, document), document=document, roles=roles,
                scenes=scenes, user_persona=persona, warnings=warnings)


def _load_task_toml(task_dir: Path) -> Task:
    legacy = read_legacy(task_dir)
    instruction_file = task_dir / "instruction.md"
    if not instruction_file.is_file():
        raise TaskError("instruction.md: missing; a task.toml task keeps its prompt in instruction.md "
                        "next to task.toml")
    instruction = read_utf8(instruction_file).strip()
    if not instruction:
        raise TaskError("instruction.md: is empty; write the task's instruction in it")
    document = dict(legacy.declared)
    if legacy.compat:
        document["benchflow"] = {"compat": legacy.compat}
    return Task(path=task_dir, layout="task-toml", config=legacy.config, instruction=instruction,
                paths=TaskPaths.resolve(task_dir), document=document, warnings=list(legacy.warnings))


def load_task(path: str | Path) -> Task:
    """Load the task folder at ``path`` (task.md wins over task.toml).

    Raises:
        TaskError: not a task folder, or a file that does not parse or validate;
            the message names the file, the key or line, and the fix.
    """
    task_dir = Path(path).resolve()
    if not task_dir.is_dir():
        raise TaskError(f"{path}: not a folder; give the path of a task folder")
    if not is_task_dir(task_dir):
        raise TaskError(f"{path}: not a task folder (no task.md or task.toml); "
                        "create one with bench new NAME")
    if (task_dir / "task.md").is_file():
        return _load_task_md(task_dir)
    return _load_task_toml(task_dir)
