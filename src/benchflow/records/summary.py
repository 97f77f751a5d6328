"""The job's ``summary.json`` (contracts §3.1), written once its trials have run.

``summary.json`` keeps BenchFlow 0.7's keys, including the short aliases
``pass``/``fail``/``error`` that 0.7 dashboards read; 0.7's aggregates this
version does not compute (memory scores, skill and phase aggregates) are kept
as extra keys when a 0.7 summary is read.
"""

from typing import Any

from pydantic import Field

from .base import Number, Record


class JobSummary(Record):
    """``summary.json``: the job's counts and score over each planned task's final trial.

    Counts use the audit buckets (§3.10): a verifier error comes first, then
    reward 1 ``passed``, any other reward ``failed``, an error ``errored``,
    else ``unscored``. ``<jobs_dir>/summary.json`` is a copy of the latest job's.
    """

    job_name: str | None = Field(None, description="The job folder's name.")
    agent: str | None = Field(None, description="The agent the job ran.")
    model: str | None = Field(None, description="The model, or null for controls.")
    environment: str | None = Field(None, description="The sandbox backend.")
    source: dict[str, Any] | None = Field(None, description="Where fetched tasks came from (-d, --source-repo, a "
                                          "repository target): registry, repo, path, ref, commit; null: local.")
    dataset_name: str | None = Field(None, description="The registry dataset run with -d, or null.")
    dataset_version: str | None = Field(None, description="Its version, or null.")
    concurrency: int | None = Field(None, description="Trials run at once.")
    agent_idle_timeout_sec: float | None = Field(None, description="The idle watchdog as asked for.")
    total: int | None = Field(None, description="Planned tasks (× seeds): the score's denominator.")
    passed: int | None = Field(None, description="Final trials with reward 1 and no verifier error.")
    failed: int | None = Field(None, description="Final trials with another reward.")
    errored: int | None = Field(None, description="Final trials with an error and no reward.")
    verifier_errored: int | None = Field(None, description="Final trials whose verifier failed.")
    unscored: int | None = Field(None, description="Planned tasks with no reward and no error (or never run).")
    pass_: int | None = Field(None, alias="pass", description="= passed (0.7's alias).")
    fail: int | None = Field(None, description="= failed (0.7's alias).")
    error: int | None = Field(None, description="= errored (0.7's alias).")
    timed_out: int | None = Field(None, description="Final trials whose agent ran out of wall-clock time.")
    error_categories: dict[str, int] | None = Field(None, description="Error category -> trials; null if none.")
    verifier_error_categories: dict[str, int] | None = Field(None, description="Verifier error category -> "
                                                             "trials; null if none.")
    score: str | None = Field(None, description="passed / total as a percentage, e.g. \"12.5%\".")
    score_ratio: Number = Field(None, description="passed / total.")
    score_excl_errors: str | None = Field(None, description="passed / (passed + failed) as a percentage.")
    score_excl_errors_ratio: Number = Field(None, description="passed / (passed + failed).")
    mean_reward: Number = Field(None, description="Mean reward over the scored final trials, or null.")
    elapsed_sec: Number = Field(None, description="Wall time of the run that wrote this summary.")
    budget: dict[str, Any] | None = Field(None, description="Job budgets: caps, spent, stopped, reason, "
                                          "cancelled, not_started.")
    trials: dict[str, str | None] | None = Field(None, description="Task (or task@seedN) -> its final trial "
                                                 "folder, null if it never finished.")
    seeds: dict[str, Any] | None = Field(None, description="With --seeds: per task n, mean reward, variance, "
                                         "pass@k.")
    checkpoint_retries: dict[str, Any] | None = Field(None, description="With --retry-from-checkpoint: retried "
                                                      "(trials retried from a checkpoint), passed and improved "
                                                      "(retries that passed / beat the trial's reward), "
                                                      "mean_reward of the retries, trials (task -> retry reward); "
                                                      "null when none was retried.")
