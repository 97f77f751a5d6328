"""Agent error words → categories (contracts §3.11) and what is retried (§3.8)."""

from __future__ import annotations

import pytest

from benchflow.categories import classify_error, is_retryable


@pytest.mark.parametrize(("message", "category"), [
    (None, None),
    ("Agent idle for 600s with no new tool call, message, or thought", "idle_timeout"),
    ("Agent x install failed with exit code 1", "install_failure"),
    ("Agent closed stdout during session/prompt", "pipe_closed"),
    ("suspected provider api error: zero tokens", "suspected_api_error"),
    ("provider api error [rate_limit/transient] HTTP 429 on 3/3 requests", "api_error"),
    ('ACP error -32603 during session/prompt: Internal error {"details": "HTTP 401"}', "provider_auth"),
    ("ACP error -32603: Too Many Requests", "provider_rate_limit"),
    ("ACP error -32603: HTTP 503 from upstream", "infra_failure"),
    ("ACP error -32603: HTTP 400 bad", "provider_rejected"),
    ("ACP error -32601 during initialize: Method not found", "acp_error"),
    ("Your key was rejected as invalid", "provider_auth"),
    ("Agent prompt exceeded wall-clock budget 300s", "timeout"),
    ("connection reset by peer", "infra_failure"),
    ("it timed out", "timeout"),
    ("something else", "other"),
])
def test_classify(message, category):
    assert classify_error(message) == category


def test_retry_policy():
    assert is_retryable("pipe_closed") and is_retryable("idle_timeout") and is_retryable("install_failure")
    assert not is_retryable("timeout") and not is_retryable("provider_auth") and not is_retryable("other")
    assert is_retryable("api_error", "provider api error [server/transient] HTTP 500")
    assert not is_retryable("api_error", "provider api error [auth/permanent] HTTP 401")
