"""The sandbox a static check judges a task against, looked up by name (``--sandbox``)."""

from __future__ import annotations

from typing import Any

from benchflow.tasks.capability import RuntimeTarget, runtime_issues


def runtime_target_for(task: Any) -> RuntimeTarget:
    """Without ``--sandbox``: the first sandbox that works here and can run ``task`` (its
    capabilities give no runtime issue), as the registry orders them (docker first, modal for a
    task that asks for GPUs); else the default sandbox, whose issues the check then reports."""
    from benchflow.sandbox import default_backend, first_that_can

    gpus = bool(task.config.sandbox.gpus or task.config.sandbox.gpu_types)
    picked = first_that_can(lambda name, backend: not runtime_issues(task, backend.capabilities, name)[0],
                            needs_gpus=gpus)
    name, why = picked if picked is not None else default_backend(needs_gpus=gpus)[:2]
    return runtime_target(name, why=why)


def runtime_target(name: str, why: str = "--sandbox") -> RuntimeTarget:
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

    return RuntimeTarget(name=name, capabilities=backend.capabilities, adaptations=adaptations, why=why)
