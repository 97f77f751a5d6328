"""Sandbox backends: a table of built-in ones plus the ``benchflow.sandboxes`` entry points.

Each entry names a :class:`~benchflow.sandbox.base.Backend` object as
``"module:attribute"``; a backend's module is imported only when it is asked
for, so importing this registry imports no engine SDK. A package adds a
backend without editing BenchFlow by declaring an entry point::

    [project.entry-points."benchflow.sandboxes"]
    my-cloud = "my_package.sandbox:BACKEND"

A built-in name cannot be taken over by an entry point (the entry point is
ignored, with a warning when the entry points are read: a built-in name is
found without reading them).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable

from benchflow.errors import ConfigError

from .base import Backend, Capabilities, ExecResult, Sandbox, SandboxSpec

__all__ = ["BACKENDS", "ENTRY_POINT_GROUP", "Backend", "Capabilities", "ExecResult", "Sandbox", "SandboxSpec",
           "get_backend", "names", "default_backend", "default_backend_name", "first_that_can"]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "benchflow.sandboxes"

# The built-in backends: name -> "module:attribute" of its Backend object. Imported lazily.
BACKENDS: dict[str, str] = {
    "docker": "benchflow.sandbox.docker.backend:BACKEND",
    "remote-docker": "benchflow.sandbox.docker.backend:REMOTE_BACKEND",
    "local": "benchflow.sandbox.local.backend:BACKEND",
    "podman": "benchflow.sandbox.docker.backend:PODMAN_BACKEND",
    "docker+runsc": "benchflow.sandbox.docker.backend:GVISOR_BACKEND",
    "apple-container": "benchflow.sandbox.apple_container.backend:BACKEND",
    "modal": "benchflow.sandbox.modal.backend:BACKEND",
    "agentcore": "benchflow.sandbox.agentcore.backend:BACKEND",
}

# The default --sandbox: the first of these that works here, else the last.
DEFAULT_ORDER = ("docker", "local")

# The default --sandbox for tasks that ask for GPUs, when none of DEFAULT_ORDER gives GPUs and it is set up
# (the reference's rule: "docker, or modal for a task that asks for GPUs").
GPU_DEFAULT = "modal"

# Names the CLI reference knows that this build does not provide, with why.
UNSUPPORTED: dict[str, str] = {}


def _registered() -> dict[str, str]:
    """Every backend: the built-in table, then the entry points (read each call: cheap, and a
    package installed meanwhile, or put on ``sys.path`` by a test, is seen)."""
    from importlib.metadata import entry_points  # with email and zipfile: only when a name is not built in

    table = dict(BACKENDS)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in BACKENDS:
            log.warning("entry point %s = %s ignored: %r is a built-in sandbox", point.name, point.value,
                        point.name)
            continue
        table.setdefault(point.name, point.value)
    return table


def names() -> list[str]:
    """The names ``--sandbox`` takes: built-in ones first, then those of installed packages."""
    return list(_registered())


def get_backend(name: str) -> Backend:
    """The backend called ``name``.

    Raises:
        ConfigError: unknown or unsupported name; the message lists the choices.
    """
    target = BACKENDS.get(name)  # a built-in wins over any entry point: no need to read them (~5 ms)
    if target is None:
        table = _registered()
        target = table.get(name)
    if target is None:
        known = ", ".join(table)
        if name in UNSUPPORTED:
            raise ConfigError(f"--sandbox {name}: not available in this build ({UNSUPPORTED[name]}); "
                              f"use one of: {known}")
        raise ConfigError(f"--sandbox {name}: unknown sandbox; use one of: {known}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def default_backend(*, needs_gpus: bool = False) -> tuple[str, str, tuple[bool, str]]:
    """(name, why it was chosen, its availability): the first of :data:`DEFAULT_ORDER` that works
    here, else the last one; with ``needs_gpus`` (a task asks for GPUs), :data:`GPU_DEFAULT` when
    none of those gives GPUs and it is set up (its credentials are in the environment)."""
    if needs_gpus and not any(get_backend(name).capabilities.gpus for name in DEFAULT_ORDER):
        gpu = get_backend(GPU_DEFAULT)
        if gpu.configured():
            return GPU_DEFAULT, f"default for tasks that ask for GPUs ({', '.join(DEFAULT_ORDER)} give none)", \
                gpu.available()
    skipped = []
    for name in DEFAULT_ORDER[:-1]:
        availability = get_backend(name).available()
        if availability[0]:
            return name, f"default: {availability[1]}", availability
        skipped.append(f"{name}: {availability[1]}")
    last = DEFAULT_ORDER[-1]
    return last, f"default: {'; '.join(skipped) or 'the last choice'}", get_backend(last).available()


def default_backend_name() -> str:
    return default_backend()[0]


def first_that_can(can_run: Callable[[str, Backend], bool], *, needs_gpus: bool = False) -> tuple[str, str] | None:
    """(name, why) of the first backend that works here and of which ``can_run(name, backend)`` holds
    (a task's demands against its capabilities), else None. Tried in order: :data:`DEFAULT_ORDER`,
    :data:`GPU_DEFAULT` for a task that asks for GPUs, then every other backend the user set up on
    purpose (``configured()``: a cloud is never asked about unless its credentials are given)."""
    order = [*DEFAULT_ORDER, *([GPU_DEFAULT] if needs_gpus else [])]
    order += [name for name in names() if name not in order and get_backend(name).configured()]
    for name in dict.fromkeys(order):
        backend = get_backend(name)
        if not can_run(name, backend):
            continue
        works, why = backend.available()
        if works:
            return name, f"the first sandbox here that can run it: {why}"
    return None
