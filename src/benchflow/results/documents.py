"""The typed documents ``bench … --json`` prints and the Python API returns.

Each top-level document carries ``kind``, ``schema_version`` and
``schema_minor`` (contracts §8.5); readers ignore unknown fields. Sub-blocks
whose shape is fixed by the contracts but open-ended (denominators,
solve-rate blocks, per-setting checks) are plain dicts so newer keys pass
through unchanged. ``model_dump(mode="json")`` is the JSON form; floats are
finite by construction (the reader turns NaN/Inf into ``None``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .outcome import Assessment, Control, Execution, Outcome

SCHEMA_VERSION = 1
SCHEMA_MINOR = 0


class TrialSummary(BaseModel):
    """One trial folder in a row: what ran, how it ended, what it cost."""

    model_config = ConfigDict(extra="ignore")

    name: str
    """The trial folder name, ``<task>__<hex8>``."""
    path: str
    task_name: str
    reward: float | None = None
    """``rewards.reward``; ``None`` means unscored."""
    rewards: dict[str, Any] | None = None
    outcome: Outcome
    execution: Execution
    assessment: Assessment
    control: Control | None = None
    error: str | None = None
    error_category: str | None = None
    verifier_error: str | None = None
    verifier_error_category: str | None = None
    duration_sec: float | None = None
    n_tool_calls: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None
    started_at: str | None = None
    finished_at: str | None = None
    agent: str | None = None
    model: str | None = None
    finished: bool
    """True when ``result.json`` exists (the only thing resume trusts)."""
    seed: int | None = None
    """The ``--seeds`` value this trial ran with; each (task, seed) is its own sample."""
    n_attempts: int = 1
    """Attempt folders of this (task, seed) in the job (only the counted one is listed with ``attempts='best'``)."""
    job: str | None = None
    """The job folder name, when several jobs are read together."""
    steps: list[dict[str, Any]] | None = None
    """A multi-step task's steps (``result.json`` ``steps``: index, name, status, reward, min_reward)."""
    turns: list[dict[str, Any]] | None = None
    """A multi-role scene's turns (``turns/<NN>-<role>/turn.json``: index, scene, role, agent, model, status,
    n_tool_calls, total_tokens, cost_usd, seconds, error, error_category, folder, has_trajectory, user_rounds,
    user_stopped_by)."""
    simulated_user: dict[str, Any] | None = None
    """The trial's simulated user in brief (``simulated-user.json``: model, rounds, max_rounds, stopped_by)."""
    review: dict[str, Any] | None = None
    """The current rubric scoring revision (``result.json`` ``scoring``: current, attempt, status, rubric_reward,
    decision); beside ``reward``, never replacing it."""
    integrity: dict[str, Any] | None = None
    """The ``--integrity`` verdict (``integrity/claim_verdict.json``: verdict, mode, flag_codes)."""


class JobDocument(BaseModel):
    """``benchflow.job``: one job folder read back (or a glob / results.jsonl read as one)."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["benchflow.job"] = "benchflow.job"
    schema_version: int = SCHEMA_VERSION
    schema_minor: int = SCHEMA_MINOR
    path: str
    name: str
    source: Literal["job", "glob", "results.jsonl"] = "job"
    running: bool = False
    """A live process holds the job's lock: unfinished trials may still finish."""
    settings: dict[str, Any] = Field(default_factory=dict)
    attempts: Literal["best", "all"] = "best"
    include_controls: bool = False
    denominators: dict[str, Any] = Field(default_factory=dict)
    denominators_with_controls: dict[str, Any] | None = None
    controls_excluded: int = 0
    groups: list[dict[str, Any]] = Field(default_factory=list)
    solve_rates: dict[str, Any] = Field(default_factory=dict)
    error_categories: dict[str, int] = Field(default_factory=dict)
    verifier_error_categories: dict[str, int] = Field(default_factory=dict)
    timing_totals: dict[str, float] = Field(default_factory=dict)
    total_tokens: int | None = None
    cost_usd: float | None = None
    regrade_summary: dict[str, Any] | None = None
    """``regrade-summary.json`` as ``bench regrade`` wrote it (per-trial blocks are in each trial's regrade.json)."""
    notes: list[str] = Field(default_factory=list)
    """What the reader could not read, in plain words (never silently skipped)."""
    trials: list[TrialSummary] = Field(default_factory=list)
    trajectories: dict[str, dict[str, list[Any]]] | None = None
    """Only with ``--trajectories``: trial name -> {"acp": events, "llm": exchanges}."""


class TrialDocument(BaseModel):
    """``benchflow.trial``: one trial folder with its records (trajectories only when asked)."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["benchflow.trial"] = "benchflow.trial"
    schema_version: int = SCHEMA_VERSION
    schema_minor: int = SCHEMA_MINOR
    path: str
    name: str
    summary: TrialSummary
    config: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    timing: dict[str, Any] | None = None
    prompts: list[Any] | None = None
    instruction: str | None = None
    """The first resolved prompt (prompts.json), which is the task instruction after any prefix."""
    verifier_files: dict[str, str] = Field(default_factory=dict)
    """``verifier/<name>`` -> text, each capped (see ``reader.VERIFIER_TEXT_CAP``)."""
    reward_details: Any | None = None
    regrade: dict[str, Any] | None = None
    files: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    trajectories: dict[str, list[Any]] | None = None
    conversations: list[dict[str, Any]] = Field(default_factory=list)
    """Every ``simulated-user.json`` in full (rounds with the agent's message and the user's reply, why it
    stopped), each with its ``folder``: "." for the trial, ``turns/<NN>-<role>`` for a scene's turn."""
    branches: dict[str, Any] | None = None
    """A branched trial's ``benchflow.branch-view`` document (forks, children, rewards, advantages)."""


class ComparisonSide(BaseModel):
    label: str
    path: str
    denominators: dict[str, Any]
    solve_rates: dict[str, Any]


class ComparisonRow(BaseModel):
    task: str
    group: dict[str, Any] | None = None
    status: Literal["paired", "only_a", "only_b"]
    n_a: int
    n_b: int
    scored_a: int
    scored_b: int
    reward_a: float | None = None
    reward_b: float | None = None
    delta: float | None = None
    checks: list[dict[str, Any]] = Field(default_factory=list)


class Comparison(BaseModel):
    """``benchflow.comparison``: two jobs paired by task (contracts §4.6)."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["benchflow.comparison"] = "benchflow.comparison"
    schema_version: int = SCHEMA_VERSION
    schema_minor: int = 1
    """1: ``settings_diff``, ``error_shares`` and ``paired_test`` added."""
    a: ComparisonSide
    b: ComparisonSide
    a_paired: dict[str, Any]
    b_paired: dict[str, Any]
    vary: list[str] = Field(default_factory=list)
    by: list[str] = Field(default_factory=list)
    include_controls: bool = False
    attempts: Literal["best", "all"] = "best"
    solve_threshold: float | None = None
    pass_at_k: dict[str, Any] = Field(default_factory=dict)
    """Over the paired tasks: {"a": {k: v}, "b": {k: v}} for pass@k and pass^k."""
    summary: dict[str, Any]
    rows: list[ComparisonRow]
    setting_mismatches: list[dict[str, Any]] = Field(default_factory=list)
    caveats: list[str] = Field(default_factory=list)
    settings_diff: list[dict[str, Any]] = Field(default_factory=list)
    """Every setting that differs on some paired task, declared or not: {setting, a, b, tasks}; what explains a
    difference before the numbers do."""
    error_shares: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Per side, each error category's share of the paired tasks' finished trials."""
    paired_test: dict[str, Any] | None = None
    """``benchflow.results.paired.paired_test``: McNemar over pass/fail, a seeded paired bootstrap over rewards,
    the tasks that flipped each way, the trials left out as not the agent's doing."""
