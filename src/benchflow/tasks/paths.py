"""Where a task's parts live on disk, with the alias rules of contracts §1.2.

``verifier/`` wins over ``tests/`` and ``oracle/`` over ``solution/`` as soon
as the native folder exists (even empty: there is no fallback). A task.md may
point elsewhere with ``benchflow.verifier.path`` / ``benchflow.oracle.path``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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
        env = task_dir / "environment"
        compose = next((env / n for n in ("docker-compose.yaml", "docker-compose.yml") if (env / n).is_file()), None)
        return cls(
            task_dir=task_dir,
            layout=layout,
            environment_dir=env,
            dockerfile=env / "Dockerfile",
            compose_file=compose,
            verifier_dir=_pick(task_dir, _declared(bf, "verifier"), "verifier", "tests"),
            oracle_dir=_pick(task_dir, _declared(bf, "oracle"), "oracle", "solution"),
            instruction_file=task_dir / "instruction.md" if layout == "task-toml" else None,
        )


def _declared(bf: Any, key: str) -> str | None:
    block = bf.get(key) if isinstance(bf, dict) else None
    path = block.get("path") if isinstance(block, dict) else None
    return path.rstrip("/") if isinstance(path, str) and path.strip("/") else None


def _pick(task_dir: Path, declared: str | None, native: str, legacy: str) -> Path:
    if declared:
        return task_dir / declared
    return task_dir / native if (task_dir / native).exists() else task_dir / legacy
