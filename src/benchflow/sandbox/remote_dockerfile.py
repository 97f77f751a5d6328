"""The Dockerfile a remote builder (Daytona, Modal) builds from a task: its own, or ``FROM`` its prebuilt image."""

from __future__ import annotations

from pathlib import Path

from benchflow.errors import BuildError

from .base import SandboxSpec
from .bundled_skills import without_skill_copies


def dockerfile_text(spec: SandboxSpec) -> str:
    """The Dockerfile a remote builder builds: the task's, or ``FROM`` its prebuilt image."""
    if spec.image:
        return f"FROM {spec.image}\n"
    if spec.environment_dir is None:
        raise BuildError(f"{spec.name}: no environment/ folder and no prebuilt image to build from")
    path = Path(spec.environment_dir) / spec.dockerfile
    if not path.is_file():
        raise BuildError(f"{spec.name}: {path} does not exist")
    text = path.read_text()
    return text if spec.bundled_skills else without_skill_copies(text)
