"""The typed, versioned records of a job folder (contracts §3.1–3.6).

One model per file — ``config.json`` (:class:`TrialConfig`), ``result.json``
(:class:`TrialResult`), ``timing.json`` (:class:`TrialTiming`),
``summary.json`` (:class:`JobSummary`), ``evaluation.json``
(:class:`EvaluationRecord`), ``run-card.json`` (:class:`RunCardRecord`), the review's ``review_report.json``,
``scoring/<n>.json`` and ``integrity/claim_verdict.json`` (:mod:`.review`) —
written by one constructor each (``jobs/record.py``, ``jobs/summary.py``,
``jobs/job.py``, ``jobs/plan.py``) and read back by every reader through
:func:`read_record` / :func:`upgrade`, which also read BenchFlow 0.7 records.
Unknown keys are kept. The JSON Schemas ship in ``schema/`` (see :mod:`.schemas`).

This package imports nothing of ours but ``errors`` and ``util``.
"""

from __future__ import annotations

from .base import SCHEMA_VERSION, Record
from .io import read_json, read_optional, read_record, write_record
from .job import EvaluationRecord, JobSummary, RunCardRecord
from .review import ClaimVerdict, ReviewReport, ScoringPointer, ScoringRevision
from .trial import AgentResult, FinalMetrics, Rewards, TrajectorySummary, TrialConfig, TrialResult, TrialTiming
from .upgrade import Unreadable, as_result, upgrade

__all__ = [
    "SCHEMA_VERSION", "AgentResult", "ClaimVerdict", "EvaluationRecord", "FinalMetrics", "JobSummary", "Observation", "Record",
    "ReviewReport", "Rewards", "ScoringPointer", "ScoringRevision", "TreeRecord",
    "RunCardRecord", "TrajectorySummary", "TrialConfig", "TrialResult", "TrialTiming", "Unreadable",
    "as_result", "read_json", "read_optional", "read_record", "upgrade", "write_record",
]


def __getattr__(name: str):
    """``Observation`` and ``TreeRecord`` (branching's records) are imported when first asked for:
    a plain run does not pay for building them."""
    if name in ("Observation", "TreeRecord"):
        from . import branch

        return getattr(branch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
