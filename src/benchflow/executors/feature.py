"""Executors as a run feature (``jobs.extensions``): a run whose ``--executor`` is not ``in-process``
has its attempts run by :func:`~benchflow.executors.open_executor` (a Ray cluster)."""

from __future__ import annotations

from typing import Any

from . import check_executor, open_executor, preflight


class ExecutorsFeature:
    name = "executors"

    def parse_field(self, name: str, value: Any) -> Any:
        return check_executor(value) if name == "executor" and isinstance(value, str) else value

    def preflight(self, spec: Any) -> None:
        preflight(spec)

    def executor(self, spec: Any, models: Any, tasks: list[Any]) -> Any:
        return open_executor(spec, models=models, tasks=tasks)


EXECUTORS = ExecutorsFeature()
