"""Outcome buckets and error categories (contracts §3.10–3.11)."""

from __future__ import annotations

import pytest

from benchflow.categories import classify_error, classify_verifier_error
from benchflow.results.outcome import (
    clean_reward,
    control_of,
    execution_of,
    outcome_of,
    score_bucket,
)
from benchflow.scoring import audit_bucket


@pytest.mark.parametrize("message, category", [
    ("Agent idle for 600s with no new tool call, message, or thought", "idle_timeout"),
    ("Agent install failed (exit 1)", "install_failure"),
    ("agent closed stdout", "pipe_closed"),
    ("Suspected provider API error: no tokens", "suspected_api_error"),
    ("Provider API error [server/transient] HTTP 500 on 3/4 requests", "api_error"),
    ("ACP error: HTTP 401 unauthorized", "provider_auth"),
    ("credential was rejected as invalid", "provider_auth"),
    ("ACP error: too many requests", "provider_rate_limit"),
    ("ACP error: provider unavailable", "infra_failure"),
    ("ACP error: HTTP 400 provider rejected request", "provider_rejected"),
    ("ACP error: something odd", "acp_error"),
    ("Sandbox startup failed: image not found", "sandbox_setup"),
    ("Agent prompt exceeded wall-clock budget 300s", "timeout"),
    ("Connection reset by peer", "infra_failure"),
    ("the step timed out", "timeout"),
    ("KeyError: 'x'", "other"),
    (None, None),
])
def test_classify_error(message, category):
    assert classify_error(message) == category


@pytest.mark.parametrize("message, category", [
    ("Verifier crashed: dependency install failed", "verifier_dep_install"),
    ("Verifier crashed: connection refused", "verifier_infra"),
    ("Verifier crashed: exit 2 without reward", "verifier_failure"),
    ("Verifier timed out after 600s", "verifier_timeout"),
    ("no reward file", "verifier_other"),
])
def test_classify_verifier_error(message, category):
    assert classify_verifier_error(message) == category


def test_reward_wins_in_score_bucket_but_not_in_audit_bucket():
    assert score_bucket(1.0, "timed out", None) == "passed"
    assert score_bucket(0.3, None, "boom") == "failed"
    assert audit_bucket(1.0, None, "boom") == "verifier_errored"
    assert score_bucket(None, None, None) == "errored"
    assert audit_bucket(None, None, None) == "unscored"
    assert outcome_of(None, None, None, True) == "unscored"
    assert outcome_of(None, None, "v", True) == "verifier_errored"
    assert outcome_of(1.0, None, None, False) == "unscored"


def test_execution_and_controls():
    assert execution_of(None, None, True) == "completed"
    assert execution_of("x", "idle_timeout", True) == "timed_out"
    assert execution_of("x", "agent_integration", True) == "integration_failed"
    assert execution_of("x", "other", True) == "errored"
    assert execution_of(None, None, False) == "unfinished"
    assert control_of("oracle", "t") == "oracle"
    assert control_of("nop", "t") == "empty"
    assert control_of("claude", "t__o") == "oracle"
    assert control_of("claude", "t__e") == "empty"
    assert control_of("claude", "t") is None


def test_clean_reward_drops_non_numbers():
    assert clean_reward(True) is None
    assert clean_reward(float("nan")) is None
    assert clean_reward("1") is None
    assert clean_reward(1) == 1.0
