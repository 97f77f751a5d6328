"""The records of a multi-step task (``steps`` in the task): one ``step.json`` per step folder
(``steps/<NN>-<name>/``), and the summary of every step in ``result.json`` (``steps``).

The trial's reward is rolled up from the steps' rewards by the task's
``multi_step_reward_strategy``: ``mean`` (the default: per-key mean over the
steps that were scored, a key a step lacks counting 0) or ``final`` (the last
scored step's rewards). A step whose reward is below its ``min_reward`` stops
the trial: the steps after it never run and are recorded as not run.
"""

from typing import Any

from pydantic import Field

from .base import Block, Number, Record, Text


class StepSummary(Block):
    """One step as ``result.json`` lists it."""

    index: int = Field(description="1-based position of the step in the task's steps.")
    name: str = Field(description="The step's name (its folder under the task's steps/).")
    path: str | None = Field(None, description="Its folder in the trial folder, e.g. steps/01-scaffold.")
    status: str = Field(description="passed (reward 1.0 or more), failed (scored below 1.0), gated (scored "
                        "below its min_reward: the trial stopped), errored (agent or verifier error) or "
                        "not_run (an earlier step stopped the trial).")
    reward: Number = Field(None, description="rewards.reward of the step; null when unscored or not run.")
    min_reward: Number = Field(None, description="The step's gate, when it has one.")
    error: Text = Field(None, description="Why the step's agent side failed, or null.")
    verifier_error: Text = Field(None, description="Why the step's verifier gave no verdict, or null.")


class StepRecord(Record):
    """``step.json``: how one step of a multi-step trial ended."""

    trial_name: str | None = Field(None, description="The trial folder this step belongs to.")
    index: int = Field(description="1-based position of the step.")
    name: str = Field(description="The step's name.")
    status: str = Field(description="As in StepSummary.status.")
    prompt: str | None = Field(None, description="The prompt the agent was given for this step.")
    rewards: dict[str, Any] | None = Field(None, description="The step verifier's verdict (reward plus any "
                                           "other keys its reward file held); null when it gave none.")
    min_reward: Number = Field(None, description="The step's gate, when it has one.")
    error: Text = Field(None, description="Why the step's agent side failed, or null.")
    error_category: str | None = Field(None, description="The error's category (contracts §3.11).")
    verifier_error: Text = Field(None, description="Why the step's verifier gave no verdict, or null.")
    verifier_error_category: str | None = Field(None, description="The verifier error's category.")
    n_tool_calls: int | None = Field(None, description="Tool calls the agent made in this step.")
    timing: dict[str, float] = Field(default_factory=dict, description="Seconds per phase of this step "
                                     "(healthcheck, agent_setup, agent_execution, verifier).")
    started_at: str | None = Field(None, description="Local start time, no zone.")
    finished_at: str | None = Field(None, description="Local finish time, no zone.")
