"""Where a task's parts live on disk, with the alias rules of contracts §1.2.

``verifier/`` wins over ``tests/`` and ``oracle/`` over ``solution/`` as soon
as the native folder exists (even empty: there is no fallback). A task.md may
point elsewhere with ``benchflow.verifier.path`` / ``benchflow.oracle.path``.

Every folder a task names stays inside the task folder: a declared path is
relative without ``..``, and neither it nor ``environment/`` may lead out
through a link. Tasks are downloaded code; a path out of the task would upload
host files into the sandbox.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchflow.errors import TaskError

Layout = Literal["task-md", "task-toml"]


@dataclass(frozen=True)
class TaskPaths:
    """The resolved locations of one task's files (nothing here need exist)."""

    task_dir: Path
    layout: Layout
    environment_dir: Path
    dockerfile: Path
    compose_file: Path | None
    """``environment/docker-compose.yaml`` (or ``.yml``) when present."""
    verifier_dir: Path
    oracle_dir: Path
    instruction_file: Path | None
    """``instruction.md`` of a legacy task; None for task.md (the prompt is in the document)."""

    @property
    def solve_path(self) -> Path:
        return self.oracle_dir / "solve.sh"

    @property
    def test_path(self) -> Path:
        return self.verifier_dir / "test.sh"

    @property
    def verifier_md(self) -> Path:
        return self.verifier_dir / "verifier.md"

    @property
    def is_legacy(self) -> bool:
        return self.layout == "task-toml"

    @property
    def task_md(self) -> Path:
        return self.task_dir / "task.md"

    @property
    def task_toml(self) -> Path:
        return self.task_dir / "task.toml"

    @classmethod
    def resolve(cls, task_dir: Path, document: dict[str, Any] | None = None) -> "TaskPaths":
        task_dir = Path(task_dir)
        layout: Layout = "task-md" if (task_dir / "task.md").is_file() else "task-toml"
        bf = (document or {}).get("benchflow") or {}
        source = "task.md" if layout == "task-md" else "task.toml"
        env = _confined(task_dir, "environment", "environment/", source)
        compose = next((env / n for n in ("docker-compose.yaml", "docker-compose.yml") if (env / n).is_file()), None)
        return cls(
            task_dir=task_dir,
            layout=layout,
            environment_dir=env,
            dockerfile=env / "Dockerfile",
            compose_file=compose,
            verifier_dir=_pick(task_dir, _declared(bf, "verifier", source), "verifier", "tests", source),
            oracle_dir=_pick(task_dir, _declared(bf, "oracle", source), "oracle", "solution", source),
            instruction_file=task_dir / "instruction.md" if layout == "task-toml" else None,
        )


def _declared(bf: Any, key: str, source: str) -> tuple[str, str] | None:
    """(``benchflow.<key>.path`` as written, the key's name), when the task declares one.

    Raises:
        TaskError: an absolute path, or one with ``..``.
    """
    block = bf.get(key) if isinstance(bf, dict) else None
    path = block.get("path") if isinstance(block, dict) else None
    if path is None:
        return None
    name = f"benchflow.{key}.path"
    parts = str(path).replace("\\", "/").split("/")
    if not isinstance(path, str) or path.startswith(("/", "~")) or ".." in parts or not path.strip("/ "):
        raise TaskError(f"{source}: {name} {path!r} must be a folder inside the task (relative, without "
                        f"'..'), e.g. '{key}/'")
    return path.rstrip("/"), name


def _pick(task_dir: Path, declared: tuple[str, str] | None, native: str, legacy: str, source: str) -> Path:
    if declared:
        return _confined(task_dir, declared[0], declared[1], source)
    if os.path.lexists(task_dir / native):
        return _confined(task_dir, native, f"{native}/", source)
    return _confined(task_dir, legacy, f"{legacy}/", source)


def _confined(task_dir: Path, rel: str, name: str, source: str) -> Path:
    """``task_dir / rel``, refused when it (or a folder on the way) is a link that leads out of the task.

    Raises:
        TaskError: the path resolves outside the task folder.
    """
    path = task_dir / rel
    if not os.path.lexists(path):
        return path
    root, real = os.path.realpath(task_dir), os.path.realpath(path)
    if real != root and not real.startswith(root.rstrip("/") + "/"):
        where = f"{source}: {name}" if name.startswith("benchflow.") else name
        raise TaskError(f"{where}: leads out of the task folder through a link (to {real}); make it a "
                        "plain folder inside the task")
    return path
