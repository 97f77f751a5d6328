"""The sandbox a static check judges a task against, looked up by name (``--sandbox``)."""

from __future__ import annotations

from typing import Any

from benchflow.tasks.capability import RuntimeTarget


def runtime_target(name: str) -> RuntimeTarget:
    """The backend ``name``'s capabilities, and what a run on it would adapt (nothing is pulled).

    Raises:
        ConfigError: no backend of that name.
    """
    from benchflow.sandbox import get_backend

    backend = get_backend(name)

    def adaptations(task: Any) -> tuple[list[str], list[str]]:
        from benchflow.sandbox.fit import fit
        from benchflow.sandbox.from_task import spec_for_task

        if not backend.available()[0]:
            return [], []
        fitted = fit(backend, spec_for_task(task), pull=False)
        return ([fitted.refusal] if fitted.refusal else []), fitted.notes()

    return RuntimeTarget(name=name, capabilities=backend.capabilities, adaptations=adaptations)
