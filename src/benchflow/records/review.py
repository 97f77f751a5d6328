"""The rubric review's records: ``review_report.json``, ``scoring/<n>.json`` and ``integrity/claim_verdict.json``.

Written by :mod:`benchflow.review` (``report``, ``revisions``, ``integrity``) as
plain documents; these models are what a reader (``bench results``, ``bench
view``, a hub) validates them against, and what the shipped schemas publish.
Unknown keys are kept, like every record's.
"""

from typing import Any, Literal

from pydantic import Field

from .base import Block, Number, Record

Decision = Literal["not_publishable", "presentable_with_revisions", "publishable"]


class Gates(Block):
    """What gates the rubric reward: the verifier passed and no blocker failed."""

    tests_passed: bool | None = Field(None, description="The verifier's reward is 1.")
    blockers_passed: bool | None = Field(None, description="Every blocker criterion passed.")
    failed_blockers: list[str] = Field(default_factory=list, description="The blockers that failed, by name.")


class CriterionVerdict(Block):
    """The reviewer's verdict on one rubric criterion."""

    name: str = Field(description="The criterion's name (an identifier).")
    kind: str | None = Field(None, description="blocker, scored (v0.2) or check (v0.1).")
    weight: Number = Field(None, description="The criterion's weight (v0.2 scored criteria).")
    score: int | None = Field(None, description="0, 1 or 2 for a scored criterion.")
    outcome: str | None = Field(None, description="pass, fail or not_applicable for a pass/fail criterion.")
    explanation: str | None = Field(None, description="The reviewer's reason.")


class ReviewError(Block):
    """Why a review has no verdict (``status: reviewer_error``); never a score of 0."""

    category: str = Field(description="reviewer_not_run, no_answer, malformed_answer, or the reviewer "
                          "rollout's own error category.")
    message: str | None = Field(None, description="What happened.")


class _Outcome(Record):
    """Fields a review report and a scoring revision share."""

    status: Literal["completed", "reviewer_error"] = Field(description="completed: verdicts parsed; "
                                                           "reviewer_error: no usable answer.")
    raw_quality: Number = Field(None, description="Σ score·weight / Σ 2·weight over the scored criteria.")
    gated_quality: Number = Field(None, description="raw_quality when the gates pass, else 0.")
    rubric_reward: Number = Field(None, description="The rubric reward (= gated_quality); null when the "
                                  "reviewer failed. Reported beside the verifier's reward, never replacing it.")
    decision: Decision | None = Field(None, description="< 0.65 or gates failed: not_publishable; < 0.80: "
                                      "presentable_with_revisions; else publishable.")
    gates: Gates | None = Field(None, description="The gates the rubric reward went through.")
    criteria: list[CriterionVerdict] | None = Field(None, description="Per-criterion verdicts.")
    error: ReviewError | None = Field(None, description="Why the reviewer gave no verdict, or null.")
    raw_answer: str | None = Field(None, description="The reviewer's answer as written, when it was malformed.")
    rubric: dict[str, Any] = Field(description="The rubric used: version, name, source, sha256, criteria.")
    reviewer: dict[str, Any] = Field(description="The reviewer's settings (agent, model, sandbox, …).")


class ReviewReport(_Outcome):
    """``review_report.json`` in a reviewer's rollout folder: one review of one rollout."""

    kind: Literal["benchflow.review-report"] = "benchflow.review-report"
    reviewed: dict[str, Any] = Field(description="The reviewed rollout: trial_name, task_name, reward, path.")
    evidence: dict[str, Any] = Field(default_factory=dict, description="What the reviewer was given to read.")
    answer_source: str | None = Field(None, description="file (agent/review.json) or final_message.")
    reviewer_rollout_error: ReviewError | None = Field(None, description="The reviewer rollout's error, when "
                                                       "its answer was judged anyway.")
    reviewed_at: str | None = Field(None, description="UTC time of the review (ISO 8601).")


class ScoringRevision(_Outcome):
    """``<trial>/scoring/<attempt>.json``: one scoring of a trial; never rewritten, the newest is current."""

    kind: Literal["benchflow.scoring-revision"] = "benchflow.scoring-revision"
    attempt: int = Field(description="1 for the first scoring, then 2, 3, …; the file's name.")
    trigger: str | None = Field(None, description="What made it: run, eval-score, regrade, …")
    verifier_reward: Number = Field(None, description="The verifier's reward the gates used.")
    created_at: str | None = Field(None, description="UTC time it was written (ISO 8601).")


class ScoringPointer(Block):
    """``result.json``'s ``scoring`` block: the current scoring revision, beside the verifier's reward."""

    current: str = Field(description="The current revision, relative to the trial: scoring/<attempt>.json.")
    attempt: int | None = Field(None, description="The current revision's attempt number.")
    status: str | None = Field(None, description="completed or reviewer_error.")
    rubric_reward: Number = Field(None, description="Its rubric reward; null when the reviewer failed.")
    decision: Decision | None = Field(None, description="Its decision.")


class IntegrityFlag(Block):
    """One thing the agent did that the task does not allow."""

    code: str = Field(description="read_tests, read_oracle, wrote_reward or patched_test_runner.")
    message: str | None = Field(None, description="What it means.")
    tool_call_id: str | None = Field(None, description="The ACP tool call it came from.")
    command: str | None = Field(None, description="The command (cut at 500 characters).")
    paths: list[str] = Field(default_factory=list, description="Paths the call touched.")


class ClaimVerdict(Record):
    """``<trial>/integrity/claim_verdict.json``: the ``--integrity`` audit of what the agent did.

    It never changes a reward."""

    kind: Literal["benchflow.claim-verdict"] = "benchflow.claim-verdict"
    mode: Literal["audit", "strict"] = Field(description="The --integrity mode that wrote it.")
    verdict: Literal["clean", "flagged"] = Field(description="flagged when any flag was raised.")
    flags: list[IntegrityFlag] = Field(default_factory=list, description="Every flag, in trajectory order.")
    flag_codes: list[str] = Field(default_factory=list, description="The distinct flag codes, sorted.")
    observed: dict[str, Any] = Field(default_factory=dict, description="tool_calls, commands, files_touched, "
                                     "network_attempts.")
    task: dict[str, Any] = Field(default_factory=dict, description="network_mode and "
                                 "network_attempts_on_offline_task.")
    rewards_changed: bool = Field(False, description="Always false: the audit never changes a reward.")
    checked_at: str | None = Field(None, description="UTC time of the audit (ISO 8601).")
