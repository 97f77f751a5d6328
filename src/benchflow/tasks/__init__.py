"""The task model: load, validate, digest and discover benchmark tasks.

Both layouts are read: the native ``task.md`` (YAML frontmatter + prompt) and
the legacy ``task.toml`` + ``instruction.md`` split. See contracts §1.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .check import CHECK_LEVELS, CheckReport, check_task
    from .config import TaskConfig
    from .digest import task_digest
    from .discovery import discover_tasks, is_task_dir, resolve_collection_root
    from .document import parse_task_md, split_sections
    from .legacy import LegacyConfig, load_legacy_config, read_legacy
    from .model import Task, load_task
    from .paths import TaskPaths
    from .profiles import PROFILES, normalize_frontmatter
    from .task_md_writer import render_task_md

_HOME = {
    "check": ("CHECK_LEVELS", "CheckReport", "check_task"),
    "config": ("TaskConfig",),
    "digest": ("task_digest",),
    "discovery": ("discover_tasks", "is_task_dir", "resolve_collection_root"),
    "document": ("parse_task_md", "split_sections"),
    "legacy": ("LegacyConfig", "load_legacy_config", "read_legacy"),
    "model": ("Task", "load_task"),
    "paths": ("TaskPaths",),
    "profiles": ("PROFILES", "normalize_frontmatter"),
    "task_md_writer": ("render_task_md",),
}
_WHERE = {name: module for module, names in _HOME.items() for name in names}

__all__ = [
    "CHECK_LEVELS", "CheckReport", "LegacyConfig", "PROFILES", "Task", "TaskConfig", "TaskPaths",
    "check_task", "discover_tasks", "is_task_dir", "load_legacy_config", "load_task",
    "normalize_frontmatter", "parse_task_md", "read_legacy", "render_task_md",
    "resolve_collection_root", "split_sections", "task_digest",
]


def __getattr__(name: str) -> Any:
    """Each name from its submodule, imported when first asked for: loading a task for a run does
    not import the checker (``check``) nor the verifier document it reads (``verifier_doc``)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
