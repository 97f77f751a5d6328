"""The typed, versioned records of a job folder (contracts §3.1–3.6).

One model per file — ``config.json`` (:class:`TrialConfig`), ``result.json``
(:class:`TrialResult`), ``timing.json`` (:class:`TrialTiming`),
``summary.json`` (:class:`JobSummary`), ``evaluation.json``
(:class:`EvaluationRecord`), ``run-card.json`` (:class:`RunCardRecord`), the review's ``review_report.json``,
``scoring/<n>.json`` and ``integrity/claim_verdict.json`` (:mod:`.review`), the trainer outputs
``canonical-selection.json`` and the health summary (:mod:`.canonical`) —
written by one constructor each (``jobs/record.py``, ``jobs/summary.py``,
``jobs/job.py``, ``jobs/plan.py``) and read back by every reader through
:func:`read_record` / :func:`upgrade`, which also read BenchFlow 0.7 records.
Unknown keys are kept. The JSON Schemas ship in ``schema/`` (see :mod:`.schemas`).

This package imports nothing of ours but ``errors`` and ``util``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import SCHEMA_VERSION, Record
from .io import read_json, read_optional, read_record, write_record
from .job import EvaluationRecord, RunCardRecord
from .trial_config import TrialConfig
from .upgrade import Unreadable, as_result, upgrade

if TYPE_CHECKING:
    from .branch import Observation, TreeRecord
    from .canonical import CanonicalSelection, HealthSummary
    from .review import ClaimVerdict, ReviewReport, ScoringPointer, ScoringRevision
    from .summary import JobSummary
    from .trial import AgentResult, FinalMetrics, Rewards, TrajectorySummary, TrialResult, TrialTiming

__all__ = [
    "SCHEMA_VERSION", "AgentResult", "CanonicalSelection", "ClaimVerdict", "EvaluationRecord", "HealthSummary", "FinalMetrics", "JobSummary", "Observation", "Record",
    "ReviewReport", "Rewards", "ScoringPointer", "ScoringRevision", "TreeRecord",
    "RunCardRecord", "TrajectorySummary", "TrialConfig", "TrialResult", "TrialTiming", "Unreadable",
    "as_result", "read_json", "read_optional", "read_record", "upgrade", "write_record",
]

_LAZY = {
    "Observation": "branch", "TreeRecord": "branch", "CanonicalSelection": "canonical", "HealthSummary": "canonical",
    "ClaimVerdict": "review", "ReviewReport": "review", "ScoringPointer": "review", "ScoringRevision": "review",
    "AgentResult": "trial", "FinalMetrics": "trial", "Rewards": "trial", "TrajectorySummary": "trial",
    "TrialResult": "trial", "TrialTiming": "trial", "JobSummary": "summary",
}


def __getattr__(name: str):
    """The records written once a trial has run (its result, the job's summary, the review's,
    branching's) are imported when first asked for: ``bench run`` builds them while its first
    sandbox starts (``jobs.ahead``), not before."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
