"""The task model: load, validate, digest and discover benchmark tasks.

Both layouts are read: the native ``task.md`` (YAML frontmatter + prompt) and
the legacy ``task.toml`` + ``instruction.md`` split. See contracts §1.
"""

from __future__ import annotations

from .check import CHECK_LEVELS, CheckReport, check_task
from .config import TaskConfig
from .digest import task_digest
from .discovery import discover_tasks, is_task_dir, resolve_collection_root
from .document import parse_task_md, render_task_md, split_sections
from .legacy import LegacyConfig, load_legacy_config, read_legacy
from .model import Task, load_task
from .paths import TaskPaths
from .profiles import PROFILES, normalize_frontmatter

__all__ = [
    "CHECK_LEVELS", "CheckReport", "LegacyConfig", "PROFILES", "Task", "TaskConfig", "TaskPaths",
    "check_task", "discover_tasks", "is_task_dir", "load_legacy_config", "load_task",
    "normalize_frontmatter", "parse_task_md", "read_legacy", "render_task_md",
    "resolve_collection_root", "split_sections", "task_digest",
]
