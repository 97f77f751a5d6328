"""Integrity audit and rubric review as a run feature (``jobs.extensions``): its settings (``spec.review``)
checked, after the run's trials, before its summary, and after ``bench regrade --review``'s regrades; rewards
never change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from benchflow.jobs.layout import JobPaths
    from benchflow.jobs.spec import RunSpec


class ReviewFeature:
    name = "review"

    def check_spec(self, spec: RunSpec) -> None:
        """``--integrity strict`` is the audit plus every verifier in a separate sandbox."""
        if spec.review.integrity == "strict":
            spec.verifier.sandbox = "separate"

    async def after_trials(self, spec: RunSpec, paths: JobPaths, results: dict[str, Any], tasks: dict[str, Any],
                           emit: Any) -> None:
        from .after_run import after_trials

        await after_trials(spec, paths, results, tasks, emit)

    async def after_regrade(self, job_root: Path, pairs: list[Any], changes: dict[str, Any],
                            rows: list[dict[str, Any]]) -> dict[str, int]:
        from .regrade import after_regrade

        return await after_regrade(job_root, pairs, changes, rows)


REVIEW = ReviewFeature()
