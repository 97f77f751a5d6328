"""The runtime-capability gate: what a sandbox backend cannot run, refused up front.

A backend describes itself as data (``Capabilities`` in ``benchflow.sandbox.base``);
this module compares a task's demands against it. Things no backend of this
build runs (Windows, TPUs, a scene handoff other than sequential/shared, a
simulated user's unknown stop rule) are refused on every backend: failing closed
is better than a run that silently ignores part of the task.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .model import Task

_STEP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Folders a workspace must not be: the agent would write over the system.
UNSAFE_WORKDIRS = frozenset({"/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc",
                             "/sbin", "/sys", "/usr", "/logs"})


@dataclass(frozen=True)
class RuntimeTarget:
    """The sandbox a runtime-capability check judges a task against, handed in by the caller
    (``benchflow.checks.target.runtime_target`` looks a backend up by name), so the task model
    never imports the sandbox layer."""

    name: str
    capabilities: Any
    adaptations: Callable[[Task], tuple[list[str], list[str]]] = lambda _task: ([], [])
    """(issues, warnings): what a run there could not give the task (e.g. a compose file it refuses),
    and what it would adapt (fallback build, clamped resources)."""
    why: str = "--sandbox"
    """Why this sandbox was chosen (``--sandbox``, or the one picked for a task without it)."""


RuntimePicker = Callable[[Task], RuntimeTarget]
"""Picks the sandbox a task is judged against once it is loaded (a check without ``--sandbox``)."""


def _compose_services(task: Task) -> list[str]:
    compose = task.paths.compose_file
    if compose is None:
        return []
    import yaml

    try:
        data = yaml.safe_load(compose.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return [f"<unreadable: {type(exc).__name__}>"]
    services = data.get("services") if isinstance(data, dict) else None
    return list(services) if isinstance(services, dict) else []


def separate_verifier_issues(task: Task, forced: bool = False) -> list[str]:
    """Why the task's verifier cannot run in a separate sandbox (its own choice, or ``forced`` by
    ``--verifier-sandbox separate``): that sandbox has only its own main service, and a multi-step
    task verifies every step where its agent works."""
    cfg = task.config.verifier
    if not (forced or cfg.sandbox_mode == "separate" or cfg.sandbox is not None):
        return []
    why = []
    if cfg.service != "main":
        why.append(f"verifier.service '{cfg.service}': a separate verifier sandbox has only its own main "
                   "service; remove the setting or verify in the task's sandbox (--verifier-sandbox task)")
    if task.config.steps:
        why.append("steps: a multi-step task verifies each step in the sandbox its agent works in; drop the "
                   "separate verifier sandbox for it")
    return why


def runtime_issues(task: Task, caps: Any, backend: str) -> tuple[list[str], list[str]]:
    """(issues, warnings) for running ``task`` on a backend with capabilities ``caps``."""
    cfg = task.config
    issues: list[str] = []
    warnings: list[str] = []
    on = f"on --sandbox {backend}"
    modes = {"sandbox.network_mode": cfg.sandbox.network_mode,
             "agent.network_mode": cfg.agent.network_mode,
             "verifier.network_mode": cfg.verifier.network_mode}
    fallbacks = getattr(caps, "network_fallbacks", None) or {}
    for key, mode in modes.items():
        if mode is None or mode in caps.network_modes:
            continue
        if mode in fallbacks:
            warnings.append(f"{key} '{mode}' runs as '{fallbacks[mode]}' {on}")
        else:
            issues.append(f"{key} '{mode}' is not enforced {on} (it supports "
                          f"{', '.join(sorted(caps.network_modes))}); pick another sandbox or mode")
    if (cfg.sandbox.gpus or cfg.sandbox.gpu_types) and not caps.gpus:
        issues.append(f"sandbox.gpus: the task asks for GPUs, which {backend} cannot provide; "
                      "use a GPU-capable sandbox")
    if cfg.sandbox.tpu is not None:
        issues.append("sandbox.tpu: no sandbox of this build provides TPUs")
    if cfg.sandbox.os == "windows":
        issues.append("sandbox.os 'windows': no sandbox of this build runs Windows tasks")
    for i, step in enumerate(cfg.steps or []):
        if not _STEP_NAME.match(step.name):
            issues.append(f"steps[{i}].name {step.name!r}: use letters, digits, '.', '_' and '-' only "
                          "(it names the step's folder)")
        elif not (task.path / "steps" / step.name / "instruction.md").is_file():
            issues.append(f"steps[{i}] '{step.name}': steps/{step.name}/instruction.md is missing; add the "
                          "step's prompt there")
    issues.extend(separate_verifier_issues(task))
    services = _compose_services(task)
    if len(services) > 1 and not caps.multi_service:
        issues.append(f"environment/{task.paths.compose_file.name}: {len(services)} services, but "
                      f"{backend} runs single-container tasks only; use --sandbox docker")
    if cfg.verifier.service != "main" and not caps.multi_service:
        issues.append(f"verifier.service '{cfg.verifier.service}': {backend} has only the 'main' "
                      "service; remove the setting or use a multi-service sandbox")
    if not caps.build_from_dockerfile and cfg.sandbox.docker_image is None:
        issues.append(f"environment/Dockerfile: {backend} cannot build images; set sandbox.docker_image")
    workdir = (cfg.sandbox.workdir or "").rstrip("/")
    if workdir in UNSAFE_WORKDIRS:
        issues.append(f"sandbox.workdir '{workdir}' is a system folder; use a folder such as /app")
    issues.extend(_scene_issues(task))
    if not caps.resource_limits and (cfg.sandbox.cpus != 1 or cfg.sandbox.memory_mb != 2048):
        warnings.append(f"sandbox.cpus/memory_mb are not enforced {on}")
    return issues, warnings


def _scene_issues(task: Task) -> list[str]:
    """Scenes and the simulated user as this build runs them (``tasks.scene_rules``, ``tasks.user_plan``)."""
    from benchflow.errors import TaskError

    from .scene_rules import scene_issues

    issues = scene_issues(task)
    if task.has_user:
        from .user_plan import user_plan

        try:
            user_plan(task)
        except TaskError as exc:
            issues.append(str(exc).removeprefix("task.md: "))
    return issues
