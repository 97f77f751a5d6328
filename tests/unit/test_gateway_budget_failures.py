"""Budgets (benchflow.gateway.budget) and provider-failure detection (benchflow.gateway.failures)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from benchflow.gateway.budget import JobBudget, TrialBudget
from benchflow.gateway.failures import (
    api_error_info,
    api_error_message,
    is_transient,
    suspected_api_error_info,
    suspected_api_error_message,
)


def test_turn_budget_refuses_the_call_after_the_last_turn():
    budget = TrialBudget(turn_budget=2)
    assert budget.try_start() is None
    budget.finish(10)
    assert budget.exhausted is None
    assert budget.try_start() is None
    budget.finish(10)
    assert budget.exhausted == "turn_budget"
    assert budget.try_start() == "turn_budget"
    assert "turn budget" in budget.describe("turn_budget")


def test_turn_budget_counts_calls_in_flight():
    budget = TrialBudget(turn_budget=1)
    assert budget.try_start() is None
    assert budget.try_start() == "turn_budget"
    assert budget.exhausted == "turn_budget"


def test_token_budget_lets_the_call_that_crosses_it_finish():
    budget = TrialBudget(token_budget=100)
    assert budget.try_start() is None
    budget.finish(60)
    assert budget.exhausted is None
    assert budget.try_start() is None
    budget.finish(60)
    assert budget.exhausted == "token_budget"
    assert budget.try_start() == "token_budget"
    assert "120 of 100 tokens" in budget.describe("token_budget")


def test_no_budget_never_refuses():
    budget = TrialBudget()
    for _ in range(50):
        assert budget.try_start() is None
        budget.finish(10_000)
    assert budget.exhausted is None


def test_job_budget_book_keeps_tokens_and_cost():
    job = JobBudget(max_cost_usd=0.01, max_tokens=1000)
    job.add(400, 0.004)
    job.add(100, None)
    assert job.spent() == {"tokens": 500, "cost_usd": 0.004, "unpriced_calls": 1}
    assert job.cap_reached is None
    job.add(10, 0.006)
    assert job.cap_reached == "max_cost_usd"
    tokens_only = JobBudget(max_tokens=10)
    tokens_only.add(10, None)
    assert tokens_only.cap_reached == "max_tokens"


def test_all_calls_failed_is_an_api_error():
    info = api_error_info({"429": 3, "500": 1}, total_requests=4, failed_requests=4)
    assert info == {"subcategory": "rate_limit", "transient": True, "dominant_status": 429,
                    "status_counts": {"429": 3, "500": 1}, "total_requests": 4, "failed_requests": 4,
                    "fingerprint": "rate_limit:429"}
    message = api_error_message(info)
    assert message.lower().startswith("provider api error [rate_limit/transient] http 429 on 4/4")


def test_auth_failure_is_permanent():
    info = api_error_info({401: 2}, total_requests=2, failed_requests=2)
    assert info["transient"] is False
    assert info["fingerprint"] == "auth:401"
    assert "/permanent]" in api_error_message(info)


def test_one_success_means_no_api_error():
    assert api_error_info({"200": 1, "500": 5}, total_requests=6, failed_requests=5) is None
    assert api_error_info({}, total_requests=0, failed_requests=0) is None


@given(st.dictionaries(st.sampled_from([400, 401, 403, 404, 408, 429, 500, 502, 503, 529]),
                       st.integers(min_value=1, max_value=20), min_size=1))
def test_api_error_dominant_status_is_the_most_frequent(counts):
    total = sum(counts.values())
    info = api_error_info(counts, total_requests=total, failed_requests=total)
    assert counts[info["dominant_status"]] == max(counts.values())
    assert info["transient"] == is_transient(info["dominant_status"])
    assert info["fingerprint"] == f"{info['subcategory']}:{info['dominant_status']}"


def test_zero_tokens_and_zero_tool_calls_is_suspected():
    info = suspected_api_error_info(total_tokens=0, n_tool_calls=0, total_requests=0, failed_requests=0)
    assert info == {"total_tokens": 0, "n_tool_calls": 0, "total_requests": 0, "failed_requests": 0}
    assert suspected_api_error_message(info).lower().startswith("suspected provider api error")
    assert suspected_api_error_info(total_tokens=5, n_tool_calls=0, total_requests=1, failed_requests=0) is None
    assert suspected_api_error_info(total_tokens=0, n_tool_calls=2, total_requests=0, failed_requests=0) is None


def test_all_failed_is_not_also_suspected():
    assert suspected_api_error_info(total_tokens=0, n_tool_calls=0, total_requests=3, failed_requests=3) is None
