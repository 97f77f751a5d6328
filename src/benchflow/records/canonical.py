"""A job's trainer outputs (contracts §7.6): ``--health-summary-out`` and ``canonical-selection.json``.

Written by ``jobs/canonical.py``; ``canonical-selection.json`` is read by ``bench train convert
--canonical-selection`` and ``bench train validate --source-canonical-selection`` (which also take the
selection files of other tools, so they read it leniently).
"""

from pydantic import Field

from .base import Block, Number, Record, Text


class HealthRow(Block):
    """One finished rollout (a trial folder with ``result.json``) and what a trainer needs to know of it."""

    task_id: str = Field(description="The task's name.")
    rollout_dir: str = Field(description="The trial folder, absolute.")
    reward: Number = Field(None, description="The verifier's reward; null when unscored.")
    scored: bool = Field(description="reward is not null.")
    tool_calls: int = Field(0, description="Tool calls the agent made (0 when not counted).")
    has_llm_trajectory: bool = Field(description="trajectory/llm_trajectory.jsonl is there.")
    valid_llm_trajectory: bool = Field(description="Every non-blank line of it is a JSON object.")
    llm_trajectory_rows: int = Field(0, description="Its lines (0 when missing or malformed).")
    error: Text = Field(None, description="The trial's agent-side error, or null.")
    verifier_error: Text = Field(None, description="The verifier's error, or null.")
    error_category: str | None = Field(None, description="The error's category (§3.11).")
    verifier_error_category: str | None = Field(None, description="The verifier error's category.")


class HealthSummary(Record):
    """``--health-summary-out``: every finished rollout of the job, and counts over them."""

    job_dir: str = Field(description="The job folder, absolute.")
    total_rows: int = Field(description="Finished rollouts.")
    scored_rows: int = Field(description="Those with a reward.")
    unscored_rows: int = Field(description="Those without.")
    rows_with_tool_calls: int = Field(description="Those whose agent made a tool call.")
    zero_tool_rows: int = Field(description="Those whose agent made none.")
    missing_llm_trajectory: int = Field(description="Those with no llm_trajectory.jsonl.")
    malformed_llm_trajectory: int = Field(description="Those whose llm_trajectory.jsonl has a line that is not "
                                          "a JSON object.")
    rows: list[HealthRow] = Field(description="One row per finished rollout, by trial folder name.")


class SelectionRow(HealthRow):
    """A health row, selected for its task or rejected in favour of another rollout of it."""

    selection_reason: str | None = Field(None, description="Why it was selected: best-scored-then-reward.")
    rejected_for_task_id: str | None = Field(None, description="The task another of whose rollouts was selected.")


class CanonicalSelection(Record):
    """``canonical-selection.json`` (``--canonicalize``): one rollout per task, ranked by (scored, reward, tool
    calls), highest first."""

    job_dir: str = Field(description="The job folder, absolute.")
    policy: str = Field(description="The policy: one-healthy-per-task.")
    selected_count: int = Field(description="Tasks, one selected rollout each.")
    rejected_count: int = Field(description="The other rollouts.")
    selected: list[SelectionRow] = Field(description="Each task's selected rollout, by task.")
    rejected: list[SelectionRow] = Field(description="The rest, by task, best first.")
