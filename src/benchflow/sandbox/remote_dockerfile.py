"""The Dockerfile a remote builder (Daytona, Modal) builds from a task: its own, or ``FROM`` its prebuilt image.

Published tasks write BuildKit heredocs (``RUN <<EOF``, ``COPY <<EOF /path``). Which Dockerfile
frontend a remote service builds with is the service's choice, not ours: Modal's client reads the
Dockerfile itself to find the ``COPY`` sources it uploads, and Daytona's builder is not documented to
take them. So the remote builders get the same heredoc-free Dockerfile as the Docker backend's classic
builder (:mod:`.dockerfile_heredoc`): one ``RUN`` that runs the same script in the same shell, and each
heredoc ``COPY`` body as a file of the build context (:class:`RemoteBuild.files`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.errors import BuildError

from .base import SandboxSpec
from .bundled_skills import without_skill_copies
from .dockerfile_heredoc import ContextFile, for_classic_builder


@dataclass(frozen=True)
class RemoteBuild:
    """What a remote builder is sent: the Dockerfile, and the files it copies that are not in ``environment/``."""

    dockerfile: str
    files: list[ContextFile] = field(default_factory=list)


def dockerfile_text(spec: SandboxSpec) -> str:
    """The task's Dockerfile as the task wrote it (less its skill copies on a no-skill run), or ``FROM`` its
    prebuilt image.

    Raises:
        BuildError: no Dockerfile to build from.
    """
    if spec.image:
        return f"FROM {spec.image}\n"
    if spec.environment_dir is None:
        raise BuildError(f"{spec.name}: no environment/ folder and no prebuilt image to build from")
    path = Path(spec.environment_dir) / spec.dockerfile
    if not path.is_file():
        raise BuildError(f"{spec.name}: {path} does not exist")
    text = path.read_text()
    return text if spec.bundled_skills else without_skill_copies(text)


def remote_build(spec: SandboxSpec) -> RemoteBuild:
    """What a remote builder builds: :func:`dockerfile_text` with its heredocs made plain lines.

    Raises:
        BuildError: no Dockerfile, or a heredoc that cannot be translated (the message names the line).
    """
    text, files = for_classic_builder(dockerfile_text(spec))
    return RemoteBuild(text, files)


def with_files(environment: Path, files: list[ContextFile], dest: Path) -> Path:
    """A copy of ``environment`` at ``dest`` (links kept as links) with ``files`` added: a build context for a
    builder that reads the context from a folder; ``dest``."""
    shutil.copytree(environment, dest, symlinks=True)
    for extra in files:
        path = dest / extra.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(extra.data)
        path.chmod(extra.mode)
    return dest
