"""The per-trial records: ``result.json`` (what came of it), ``timing.json``; ``config.json`` (what ran) is
:mod:`.trial_config`'s.

Field names are the contracts' (§3.2–3.4), so a folder written by BenchFlow 0.7
and one written by this tool read the same. There is no top-level ``reward``,
``status`` or ``total_tokens`` in ``result.json``: the outcome is derived from
``rewards`` and the error fields, tokens are ``agent_result.total_tokens``.
"""

from typing import Any

from pydantic import Field, model_serializer

from .base import Block, Number, Record, Text
from .review import ScoringPointer
from .steps import StepSummary

_INFO = "null unless {what}; keys as contracts §3.12 list them."


class Rewards(Block):
    """The verifier's verdict: ``reward`` plus any other keys its reward file held (rubric items, …)."""

    reward: Number = Field(None, description="The score, 0.0–1.0 (1.0 = passed); null means unscored.")


class AgentResult(Block):
    """What the agent phase did and used (tokens as the model gateway or the agent reported them)."""

    n_tool_calls: int | None = Field(None, description="Tool calls the agent made.")
    n_skill_invocations: int | None = Field(None, description="Skill invocations (always 0 in this version).")
    n_prompts: int | None = Field(None, description="Prompts sent to the agent.")
    n_input_tokens: int | None = Field(None, description="Input (prompt) tokens, without cache reads.")
    n_output_tokens: int | None = Field(None, description="Output (completion) tokens.")
    n_cache_read_tokens: int | None = Field(None, description="Tokens read from the provider's prompt cache.")
    n_cache_creation_tokens: int | None = Field(None, description="Tokens written to the provider's prompt cache.")
    cost_usd: Number = Field(None, description="Cost in US dollars; null when not priced.")
    usage_source: str | None = Field(None, description="Where the counts come from: provider_response, "
                                     "agent_native_acp or unavailable.")
    price_source: str | None = Field(None, description="Where the price comes from (a price table), or null.")
    cost_status: str | None = Field(None, description="priced, subscription, unpriced or unavailable.")
    usage_details: dict[str, Any] | None = Field(None, description="Provider-specific detail (per-model counts, "
                                                 "what the agent itself reported).")
    total_tokens: int | None = Field(None, description="input + output + cache_read + cache_creation: the one "
                                     "token figure readers use.")


class FinalMetrics(Block):
    """The token totals under the names trajectory tools use."""

    total_prompt_tokens: int | None = Field(None, description="= agent_result.n_input_tokens.")
    total_completion_tokens: int | None = Field(None, description="= agent_result.n_output_tokens.")
    total_cached_tokens: int | None = Field(None, description="= agent_result.n_cache_read_tokens.")
    total_cost_usd: Number = Field(None, description="= agent_result.cost_usd.")


class TrajectorySummary(Block):
    """Counts over ``trajectory/acp_trajectory.jsonl`` (one step per event)."""

    steps: int = Field(0, description="Events in the trajectory.")
    tool_call_steps: int = Field(0, description="tool_call events.")
    user_message_steps: int = Field(0, description="user_message events.")
    agent_message_steps: int = Field(0, description="agent_message events.")
    agent_thought_steps: int = Field(0, description="agent_thought events.")
    other_steps: int = Field(0, description="Events of any other type (agent_timeout, oracle, …).")
    event_type_counts: dict[str, int] = Field(default_factory=dict, description="Event type -> count.")
    tool_call_status_counts: dict[str, int] = Field(default_factory=dict,
                                                    description="Tool call status -> count.")
    partial_trajectory: bool = Field(False, description="The trajectory was cut short (the agent was stopped).")
    trajectory_source: str | None = Field(None, description="acp, scraped, partial_acp, hosted_env, or the "
                                          "control agent's name.")


class TrialTiming(Block):
    """Seconds per phase, rounded to 0.1 s (``timing.json``, and ``timing`` in ``result.json``).

    A phase that did not run is absent, not null. ``timing.json`` is the bare
    map the contracts give (§3.4), so it carries no ``schema_version`` of its
    own: it is versioned by the ``result.json`` beside it.
    """

    environment_setup: Number = Field(None, description="Build, start and upload of the sandbox.")
    agent_setup: Number = Field(None, description="Agent install and model access setup.")
    agent_execution: Number = Field(None, description="The agent's run.")
    verifier: Number = Field(None, description="The verifier's run (and the workspace freeze before it).")
    total: Number = Field(None, description="Wall time from the trial's start to its result.")

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: Any) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class CheckpointRetry(Block):
    """The ``retry`` block of ``result.json`` (``--retry-from-checkpoint``): one retry forked from the
    trial's last checkpoint and verified the same way. The trial's own reward is not changed by it."""

    trigger: str = Field(description="Why the retry ran: failure (the trial did not pass) or timeout.")
    checkpoint: str | None = Field(None, description="The checkpoint it started from, as prompt:N.")
    prompts: list[str] = Field(default_factory=list, description="The prompts the retry was sent (resolved).")
    prompt_source: str | None = Field(None, description="retry-prompt (--retry-prompt), parent (the prompts "
                                      "after the checkpoint) or task (the task's prompts).")
    resume_session: bool = Field(False, description="It reloaded the trial's agent conversation (session/load).")
    status: str | None = Field(None, description="passed, failed or errored, as a branch child's.")
    reward: Number = Field(None, description="The retry's reward; null when unscored.")
    rewards: dict[str, Any] | None = Field(None, description="The verifier's whole verdict on the retry.")
    error: Text = Field(None, description="Why the retry's agent side failed (or why it could not run).")
    error_category: str | None = Field(None, description="The error's category.")
    verifier_error: Text = Field(None, description="Why the verifier gave the retry no verdict, or null.")
    total_tokens: int | None = Field(None, description="Tokens the retry's model calls used.")
    cost_usd: Number = Field(None, description="What the retry's model calls cost, or null.")
    sandbox_seconds: Number = Field(None, description="Seconds from the restore to the end of its verifier.")
    path: str | None = Field(None, description="Its folder (usual trial layout), relative to the trial folder.")


class Continuation(Block):
    """The ``continued`` block of ``result.json`` (``bench eval continue``): this trial resumed a timed-out one
    by replaying its recorded model calls, then (unless replay-only) going on with the live model."""

    from_trial: str = Field(description="The original trial folder (absolute path); never written to.")
    from_error_category: str | None = Field(None, description="How the original ended (timeout, idle_timeout, ...).")
    from_reward: Number = Field(None, description="The original's reward, or null.")
    live_model: str | None = Field(None, description="The model the calls after the recording went to; null "
                                   "with replay-only.")
    replay_only: bool = Field(False, description="--replay-only: the agent was stopped at the cut point.")
    strict_divergence: bool = Field(False, description="--strict-divergence: the first divergence stopped "
                                    "the agent and failed the trial.")
    recorded_calls: int = Field(0, description="Model calls in the original's llm_trajectory.jsonl.")
    replayed_calls: int = Field(0, description="Calls answered from the recording.")
    live_calls: int = Field(0, description="Calls made after the cut point (to the live model).")
    cut_point_reached: bool = Field(False, description="The agent asked past the recording's last call.")
    divergences: list[dict[str, Any]] = Field(default_factory=list, description="Calls whose message count "
                                              "differed from the recorded call's: call, line, sent_messages, "
                                              "recorded_messages.")
    replayed_tokens: int = Field(0, description="Tokens the replayed calls had used in the original (this "
                                 "trial's agent_result counts only its live calls).")


class TrialResult(Record):
    """``result.json``: how one trial ended. Its presence marks the trial folder as finished running.

    Both names of the same value are written because users' scripts parse
    each: ``rollout_name`` is BenchFlow 0.7's name for the trial folder and
    ``trial_name`` 0.10's; ``agent`` is the name given to ``-a`` and
    ``agent_name`` the agent's registry name (0.7 could write two different
    names, e.g. ``gemini`` and ``gemini-cli``; this version writes the same
    one twice). Renaming either would silently break those readers.
    """

    task_name: str = Field(description="The task's name (its folder name).")
    rollout_name: str | None = Field(None, description="The trial folder name, <task>__<hex8> (0.7's key).")
    trial_name: str | None = Field(None, description="The trial folder name again (0.10's key).")
    rewards: Rewards | None = Field(None, description="The verifier's verdict; null when it gave none.")
    agent: str | None = Field(None, description="The agent's name, as given to -a.")
    agent_name: str | None = Field(None, description="The agent's registry name.")
    model: str | None = Field(None, description="The model; null for control agents.")
    n_tool_calls: int | None = Field(None, description="= agent_result.n_tool_calls.")
    n_skill_invocations: int | None = Field(None, description="= agent_result.n_skill_invocations.")
    n_prompts: int | None = Field(None, description="= agent_result.n_prompts.")
    agent_result: AgentResult | None = Field(None, description="What the agent did and used.")
    final_metrics: FinalMetrics | None = Field(None, description="Token totals for trajectory tools.")
    trajectory_summary: TrajectorySummary | None = Field(None, description="Counts over the ACP trajectory.")
    error: Text = Field(None, description="Why the agent side failed, or null (a reward may still exist).")
    error_category: str | None = Field(None, description="The error's category (contracts §3.11).")
    verifier_error: Text = Field(None, description="Why the verifier gave no verdict, or null.")
    verifier_error_category: str | None = Field(None, description="The verifier error's category (§3.11).")
    export_error: Text = Field(None, description="Why writing the trainer exports failed, or null.")
    idle_timeout_info: dict[str, Any] | None = Field(None, description=_INFO.format(what="the idle watchdog "
                                                     "stopped the agent"))
    agent_timeout_info: dict[str, Any] | None = Field(None, description=_INFO.format(what="the agent ran out "
                                                      "of wall-clock time"))
    sandbox_startup_info: dict[str, Any] | None = Field(None, description=_INFO.format(what="the sandbox did "
                                                        "not build or start"))
    transport_error_info: dict[str, Any] | None = Field(None, description=_INFO.format(what="the agent's "
                                                        "stdio pipe closed"))
    verifier_timeout_info: dict[str, Any] | None = Field(None, description=_INFO.format(what="the verifier "
                                                         "timed out"))
    api_error_info: dict[str, Any] | None = Field(None, description=_INFO.format(what="the model provider "
                                                  "failed the agent's requests"))
    suspected_api_error_info: dict[str, Any] | None = Field(None, description=_INFO.format(
        what="the agent did nothing and the provider is suspected"))
    integration_failure_info: dict[str, Any] | None = Field(None, description="null unless the agent could "
                                                            "not be integrated; cause is agent_auth, "
                                                            "agent_model or agent_install.")
    copy_out_info: dict[str, Any] | None = Field(None, description="null unless copying the sandbox's logs "
                                                 "out left something behind: per folder (agent, verifier) the "
                                                 "entries dropped (links leading out, devices, FIFOs) and files "
                                                 "cut at the size cap.")
    budget_stop: str | None = Field(None, description="The job budget that stopped this trial's agent, or null.")
    partial_trajectory: bool = Field(False, description="The trajectory was cut short.")
    trajectory_source: str | None = Field(None, description="= trajectory_summary.trajectory_source.")
    started_at: str | None = Field(None, description="Local start time, no zone (str(datetime)).")
    finished_at: str | None = Field(None, description="Local finish time, no zone.")
    timing: TrialTiming | None = Field(None, description="Seconds per phase (= timing.json).")
    task_digest: str | None = Field(None, description="sha256:<hex> of the task's content when it ran.")
    sandbox_id: str | None = Field(None, description="The sandbox's id on its backend, or null.")
    environment: str | None = Field(None, description="The sandbox backend.")
    attempt: int | None = Field(None, description="1 for the first attempt, 2+ for retries.")
    seed: int | None = Field(None, description="The --seeds value, or null.")
    verifier_warnings: list[str] = Field(default_factory=list, description="What the verifier phase noticed "
                                         "but did not fail on.")
    steps: list[StepSummary] | None = Field(None, description="A multi-step task's steps in order (each also "
                                            "has steps/<NN>-<name>/step.json); null for a single-step task.")
    multi_step_reward_strategy: str | None = Field(None, description="How rewards was rolled up from the "
                                                   "steps: mean or final; null for a single-step task.")
    retry: CheckpointRetry | None = Field(None, description="--retry-from-checkpoint: the retry forked from the "
                                          "last checkpoint, beside the trial's own (kept) reward; null when "
                                          "none ran.")
    scoring: ScoringPointer | None = Field(None, description="The current rubric scoring revision (a review "
                                           "rubric's reward beside the verifier's); null when none ran.")
    continued: Continuation | None = Field(None, description="bench eval continue: the timed-out trial this one "
                                           "resumed and how the replay went; null for any other trial.")
    loop: dict[str, Any] | None = Field(None, description="--loop-strategy: {strategy, params, iterations_run, "
                                        "stop_reason (passed_bar|max_iterations|error|budget), reward_trajectory "
                                        "(each round's soft reward), first_pass_iteration, tokens_trajectory, "
                                        "tokens_to_pass}; rounds in loop/iterations.jsonl. Null without a strategy.")

    @property
    def reward(self) -> float | None:
        """``rewards.reward``: the one reward readers use."""
        return self.rewards.reward if self.rewards is not None else None

    @property
    def is_finished(self) -> bool:
        """The resume rule: a reward or a verifier error (a verifier verdict is final); else run it again."""
        return self.rewards is not None or bool(self.verifier_error)
