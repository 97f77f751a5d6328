"""Executors as a run feature (``jobs.extensions``): a run whose ``--executor`` is not ``in-process``
has its attempts run by :func:`~benchflow.executors.open_executor` (a Ray cluster)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchflow.jobs.model_access import ModelAccess
    from benchflow.jobs.plan import PlannedTask
    from benchflow.jobs.spec import RunSpec

from . import check_executor, open_executor, preflight


class ExecutorsFeature:
    name = "executors"

    def parse_field(self, name: str, value: Any) -> Any:
        return check_executor(value) if name == "executor" and isinstance(value, str) else value

    def preflight(self, spec: RunSpec) -> None:
        preflight(spec)

    def executor(self, spec: RunSpec, models: ModelAccess | None, tasks: list[PlannedTask]) -> Any:
        return open_executor(spec, models=models, tasks=tasks)


EXECUTORS = ExecutorsFeature()
