"""The sandbox a task asks for: one SandboxSpec from a loaded task, for runs, regrades and ``bench sandbox``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import SandboxSpec


def sanitize(name: str) -> str:
    """Docker-safe lowercase name: ``[^a-z0-9._-]`` -> ``-``, leading non-alnum prefixed ``0``."""
    out = re.sub(r"[^a-z0-9._-]", "-", name.lower())
    return out if out and out[0].isalnum() else "0" + out


def spec_for_task(task: Any, *, digest: str | None = None, sandbox_user: str | None = "agent",
                  base_image_override: str | None = None, labels: Mapping[str, str] | None = None,
                  ca_bundle: Path | None = None, mounts: Mapping[str, Path] | None = None,
                  bundled_skills: bool = True, setup_timeout_sec: float | None = None,
                  environment_dir: Path | None = None) -> SandboxSpec:
    """The spec of a loaded :class:`benchflow.tasks.Task`; ``digest`` defaults to the task's own;
    ``bundled_skills=False`` leaves ``environment/skills/`` out of the image (a no-skill run);
    ``environment_dir`` builds from another folder than the task's ``environment/`` (a staged copy)."""
    cfg = task.config.sandbox
    return SandboxSpec(
        name=sanitize(task.name), environment_dir=environment_dir or task.paths.environment_dir,
        cache_key=digest or task.digest(), dockerfile=task.paths.dockerfile.name, image=cfg.docker_image,
        cpus=float(cfg.cpus), memory_mb=int(cfg.memory_mb), gpus=int(cfg.gpus or 0),
        gpu_types=tuple(cfg.gpu_types or ()), network_mode=cfg.network_mode,
        build_timeout_sec=float(cfg.build_timeout_sec), env=dict(cfg.env or {}), workdir=cfg.workdir,
        base_image_override=base_image_override, sandbox_user=sandbox_user, labels=dict(labels or {}),
        ca_bundle=ca_bundle, mounts=dict(mounts or {}), compose_file=task.paths.compose_file,
        compose_variables=dict(getattr(task, "compose_env", None) or {}), bundled_skills=bundled_skills,
        setup_timeout_sec=SandboxSpec.setup_timeout_sec if setup_timeout_sec is None else setup_timeout_sec)
