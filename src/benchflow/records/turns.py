"""``turn.json``: how one turn of a multi-role scene ended (``turns/<NN>-<role>/``, :mod:`benchflow.scenes.runner`)."""

from __future__ import annotations

from pydantic import Field

from .base import Record, Text


class TurnRecord(Record):
    """One turn: which role played it with which agent, its prompt, and how it ended."""

    trial_name: str | None = Field(None, description="The trial folder this turn belongs to.")
    index: int = Field(description="1-based position of the turn across the task's scenes.")
    scene: str = Field(description="The scene's name.")
    role: str = Field(description="The role that played the turn.")
    agent: str | None = Field(None, description="The agent that played the role (registry name or agent file).")
    model: str | None = Field(None, description="The model it was asked to use; null: the agent's default.")
    reasoning_effort: str | None = Field(None, description="The reasoning effort asked for, or null.")
    status: str = Field(description="finished, timed_out (still scored), failed (the scene stopped there) or "
                        "not_run (an earlier turn stopped the scene).")
    prompt: str | None = Field(None, description="The composed prompt the turn started with.")
    error: Text = Field(None, description="Why the turn's agent failed, or null.")
    error_category: str | None = Field(None, description="The error's category (contracts §3.11).")
    n_tool_calls: int | None = Field(None, description="Tool calls the agent made in this turn.")
    n_prompts: int | None = Field(None, description="Prompts of the turn's session (1 plus the simulated user's).")
    total_tokens: int | None = Field(None, description="Tokens the turn's agent used (input, output and cache), as "
                                     "metered; null when not known.")
    cost_usd: float | None = Field(None, description="What the turn's model calls cost, or null.")
    session_id: str | None = Field(None, description="The turn's ACP session.")
    timing: dict[str, float] = Field(default_factory=dict, description="Seconds per phase of this turn "
                                     "(agent_setup, agent_execution).")
    started_at: str | None = Field(None, description="Local start time, no zone.")
    finished_at: str | None = Field(None, description="Local finish time, no zone.")
