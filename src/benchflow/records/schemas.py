"""The published JSON Schemas of the records (``schema/<name>.schema.json`` in this package).

A hub or a third-party tool validates uploads against these files; ``bench
explain --schema NAME`` prints one. The files are generated from the models
(a test checks they match); after changing a model, regenerate them with::

    .venv/bin/python -m benchflow.records.schemas
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchflow.errors import UserError

from .base import SCHEMA_VERSION
from .branch import Observation, TreeRecord
from .canonical import CanonicalSelection, HealthSummary
from .job import EvaluationRecord, RunCardRecord
from .review import ClaimVerdict, ReviewReport, ScoringRevision
from .steps import StepRecord
from .summary import JobSummary
from .trial import TrialResult, TrialTiming
from .trial_config import TrialConfig
from .turns import TurnRecord

SCHEMA_DIR = Path(__file__).with_name("schema")

MODELS: dict[str, type] = {
    "result": TrialResult,
    "config": TrialConfig,
    "timing": TrialTiming,
    "summary": JobSummary,
    "evaluation": EvaluationRecord,
    "run-card": RunCardRecord,
    "tree": TreeRecord,
    "observation": Observation,
    "step": StepRecord,
    "turn": TurnRecord,
    "review-report": ReviewReport,
    "scoring-revision": ScoringRevision,
    "claim-verdict": ClaimVerdict,
    "health-summary": HealthSummary,
    "canonical-selection": CanonicalSelection,
}
"""Schema name -> model; the file is ``<name>.schema.json``."""

FILES = {"result": "result.json", "config": "config.json", "timing": "timing.json", "summary": "summary.json",
         "evaluation": "evaluation.json", "run-card": "run-card.json",
         "tree": "tree.json", "observation": "observation.json", "step": "step.json",
         "turn": "turns/<NN>-<role>/turn.json",
         "review-report": "review_report.json", "scoring-revision": "scoring/<attempt>.json",
         "claim-verdict": "integrity/claim_verdict.json", "health-summary": "--health-summary-out",
         "canonical-selection": "canonical-selection.json"}
"""Schema name -> the file it describes."""


class UnknownSchema(UserError):
    """``bench explain --schema NAME`` with a name that has no schema (exit 2)."""


def schema_for(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the record ``name``, generated from its model.

    Raises:
        UnknownSchema: no record of that name.
    """
    model = MODELS.get(name)
    if model is None:
        raise UnknownSchema(f"--schema {name!r}: no such record; use one of {', '.join(MODELS)}")
    schema = model.model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$comment": f"BenchFlow {FILES[name]}, schema_version {SCHEMA_VERSION}; generated from "
                        f"benchflow.records.{model.__name__}",
            **schema}


def schema_path(name: str) -> Path:
    return SCHEMA_DIR / f"{name}.schema.json"


def shipped(name: str) -> str:
    """The shipped schema file's text (what ``bench explain --schema NAME`` prints).

    Raises:
        UnknownSchema: no record of that name.
    """
    if name not in MODELS:
        schema_for(name)
    return schema_path(name).read_text(encoding="utf-8")


def render(name: str) -> str:
    return json.dumps(schema_for(name), indent=2, ensure_ascii=False) + "\n"


def write_schema_files() -> list[Path]:
    """Regenerate every shipped schema file from the models."""
    from benchflow.util import atomic

    return [atomic.write_text(schema_path(name), render(name)) for name in MODELS]


if __name__ == "__main__":
    for written in write_schema_files():
        print(written)
