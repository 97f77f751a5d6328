"""The services of a multi-service sandbox, for callers above ``sandbox/`` (e.g. ``verifier.service``).

A backend whose sandboxes run a task's compose services (``Capabilities.multi_service``) gives each
sandbox a ``service(name)`` method returning a view of that service with the sandbox's ``exec``,
``exec_stream``, ``put`` and ``get``; ``main`` is the sandbox itself everywhere.
"""

from __future__ import annotations

from typing import Any

from benchflow.errors import CapabilityError

from .optional import HasServices

MAIN = "main"


def service_sandbox(sandbox: Any, name: str) -> Any:
    """The compose service ``name`` of ``sandbox`` as a sandbox (``main``: ``sandbox`` itself).

    Raises:
        CapabilityError: the backend runs single-container sandboxes.
        SandboxError: the task has no such service.
    """
    if name == MAIN:
        return sandbox
    if not isinstance(sandbox, HasServices) or not sandbox.capabilities.multi_service:
        raise CapabilityError(f"service {name!r}: this sandbox runs only the 'main' service")
    return sandbox.service(name)
