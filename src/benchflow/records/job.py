"""The job-level records written before a job's first trial: ``evaluation.json`` and ``run-card.json``
(contracts §3.6); ``summary.json``, written after its trials, is :mod:`.summary`'s.
"""

from typing import Any, Literal

from pydantic import Field

from .base import Record


class EvaluationRecord(Record):
    """``evaluation.json``: the run config a job was started with, for ``bench eval resume`` (secrets dropped)."""

    kind: Literal["benchflow.evaluation"] = Field("benchflow.evaluation", description="Document kind.")
    job_name: str | None = Field(None, description="The job folder's name.")
    tasks_dir: str | None = Field(None, description="The tasks folder the job ran, or null.")
    identity: dict[str, Any] | None = Field(None, description="agent and model: a plain rerun resumes this job "
                                            "only when they match.")
    created_at: str | None = Field(None, description="When the job was first started (ISO 8601, UTC).")
    resumed_at: str | None = Field(None, description="When it was last resumed, or null.")
    run_config: dict[str, Any] | None = Field(None, description="The run spec (bench run's options); agent_env "
                                              "without secret-looking entries.")


class RunCardRecord(Record):
    """``run-card.json``: the plan's verdict on the run (accept or refuse) and the deviations accepted."""

    kind: Literal["benchflow.run-card"] = Field("benchflow.run-card", description="Document kind.")
    verdict: Literal["accept", "refuse"] = Field("accept", description="accept, or refuse (nothing ran).")
    refusals: list[str] = Field([], description="Why the run was refused.")
    warnings: list[str] = Field([], description="What the plan noticed but accepted.")
    accepted_deviations: str | None = Field(None, description="--accept-deviations: why this run differs from "
                                            "its task set's reference.")
    deviations: list[str] | None = Field(None, description="How this run differs from its task set's "
                                         "run-reference.toml, one line per setting: 'key: reference X, this run "
                                         "Y'; null when the task set has none.")
    reference: str | None = Field(None, description="The task set's run-reference.toml the run was judged "
                                  "against, or null when it has none.")
    agent: str | None = Field(None, description="The agent.")
    model: str | None = Field(None, description="The model, or null.")
    sandbox: str | None = Field(None, description="The sandbox backend chosen.")
    n_tasks: int | None = Field(None, description="Tasks planned.")
