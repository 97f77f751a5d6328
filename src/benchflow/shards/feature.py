"""Worker shards as a run feature (``jobs.extensions``): a run with ``--worker-concurrency`` is refused what a
shard cannot keep (another executor) before the job folder is touched, and its trials run in
worker subprocesses (:func:`.run.run_shards`) while this process only watches them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from benchflow.jobs.layout import JobPaths
    from benchflow.jobs.plan import Plan, PlannedTask
    from benchflow.jobs.spec import RunSpec


class ShardsFeature:
    name = "shards"

    def preflight(self, spec: RunSpec) -> None:
        from .run import refuse_unshardable

        refuse_unshardable(spec)

    async def run_trials(self, spec: RunSpec, plan: Plan, paths: JobPaths, todo: list[PlannedTask],
                         emit: Callable[[dict[str, Any]], None]) -> tuple[dict[str, Any], dict[str, Any]]:
        from .run import run_shards

        return await run_shards(spec, plan, paths, todo, emit)


SHARDS = ShardsFeature()
