"""Sandbox backends, found by name and imported only when a plan picks one.

Each backend module exposes a ``Backend`` object (see :class:`Backend`) that
reports whether it works on this machine and creates sandboxes from a
:class:`~benchflow.sandbox.base.SandboxSpec`.
"""

from __future__ import annotations

import importlib
from typing import Protocol

from benchflow.errors import ConfigError

from .base import Capabilities, ExecResult, Sandbox, SandboxSpec

__all__ = ["BACKENDS", "Backend", "Capabilities", "ExecResult", "Sandbox", "SandboxSpec",
           "get_backend", "default_backend", "default_backend_name"]

# name -> "module:attribute" of its Backend object. Imported lazily.
BACKENDS: dict[str, str] = {
    "docker": "benchflow.sandbox.docker:BACKEND",
    "remote-docker": "benchflow.sandbox.docker:REMOTE_BACKEND",
    "local": "benchflow.sandbox.local:BACKEND",
}

# Names the CLI reference knows that this build does not provide.
UNSUPPORTED = ("daytona", "modal", "apple-container", "agentcore")


class Backend(Protocol):
    name: str
    capabilities: Capabilities

    def available(self) -> tuple[bool, str]:
        """(works here, a one-line reason) — e.g. an engine ping or a namespace probe."""

    def create(self, spec: SandboxSpec) -> Sandbox:
        """A sandbox for ``spec``; nothing is built or started yet."""


def get_backend(name: str) -> Backend:
    """The backend called ``name``.

    Raises:
        ConfigError: unknown or unsupported name; the message lists the choices.
    """
    target = BACKENDS.get(name)
    if target is None:
        known = ", ".join(BACKENDS)
        if name in UNSUPPORTED:
            raise ConfigError(f"--sandbox {name}: not available in this build; use one of: {known}")
        raise ConfigError(f"--sandbox {name}: unknown sandbox; use one of: {known}")
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def default_backend() -> tuple[str, tuple[bool, str]]:
    """(``docker`` when an engine answers, else ``local``; that backend's availability)."""
    docker = get_backend("docker").available()
    return ("docker", docker) if docker[0] else ("local", get_backend("local").available())


def default_backend_name() -> str:
    return default_backend()[0]
