"""``--loop-strategy``: the spellings a user gives, the one the run keeps, and what a retry prompt may carry."""

from __future__ import annotations

import pytest

from benchflow.loop.mode import summary
from benchflow.loop.strategy import filter_feedback, parse

PYTEST_OUTPUT = """\
ERROR    root:app.py:7 the answer is 42
FAILED tests/test_calc.py::test_add[2-2-expected-4] - AssertionError: assert 5 == 4
FAILED tests/test_calc.py::test_add[3-3-expected-6] - AssertionError: assert 7 == 6
ERROR tests/test_io.py - FileNotFoundError: /secret/expected.json
========================= 2 failed, 3 passed, 1 error in 0.12s =========================
"""


@pytest.mark.parametrize(("given", "kept", "rounds"), [
    ("single-shot", "single-shot", 1),
    ("verify-retry", "verify-retry:k=3,feedback=names", 4),
    ("verify-retry:feedback=raw, k=1", "verify-retry:k=1,feedback=raw", 2),
    ("self-review:k=2", "self-review:k=2", 3),
    ({"strategy": "verify-retry", "params": {"k": 5, "feedback": "counts"}}, "verify-retry:k=5,feedback=counts", 6),
])
def test_each_spelling_is_kept_in_one_canonical_form(given, kept, rounds):
    strategy = parse(given)
    assert strategy.text == kept and strategy.max_rounds == rounds
    assert parse(strategy.text) == strategy  # the kept form reads back as the same strategy


@pytest.mark.parametrize(("given", "says"), [
    ("retry-forever", "unknown strategy 'retry-forever'"),
    ("verify-retry:k=0", "k must be a whole number of retries, 1 or more"),
    ("verify-retry:k=two", "k must be a whole number"),
    ("verify-retry:feedback=everything", "feedback must be one of none, counts, names, raw"),
    ("self-review:feedback=names", "self-review takes k, not feedback"),
    ("single-shot:k=2", "single-shot takes no parameters, not k"),
    ("verify-retry:k=1,k=2", "k is given twice"),
    ("verify-retry:k", "'k' is not key=value"),
    ("", "give single-shot, verify-retry"),
])
def test_a_wrong_spelling_is_refused_in_one_line_naming_what_to_fix(given, says):
    with pytest.raises(ValueError, match="--loop-strategy") as refused:
        parse(given)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_names_gives_only_failing_node_ids_without_parametrize_ids_or_log_lines():
    assert filter_feedback(PYTEST_OUTPUT, "names") == "tests/test_calc.py::test_add\ntests/test_io.py"


def test_counts_gives_only_pytest_s_summary_and_none_gives_nothing():
    assert filter_feedback(PYTEST_OUTPUT, "counts") == "2 failed, 3 passed, 1 error in 0.12s"
    assert filter_feedback("FAILED a.py::t - boom\n", "counts") == "1 failing test(s)"
    assert filter_feedback(PYTEST_OUTPUT, "none") == ""
    assert filter_feedback("Traceback: something broke\n", "names") == ""  # no node id: nothing leaks


def test_raw_is_the_output_cut_to_its_cap():
    assert filter_feedback(PYTEST_OUTPUT, "raw") == PYTEST_OUTPUT.strip()
    assert filter_feedback("x" * 5000, "raw") == "x" * 4000


def test_retry_prompts_carry_the_filtered_feedback_or_none_at_all():
    prompt, feedback = parse("verify-retry:feedback=names").retry_prompt(PYTEST_OUTPUT)
    assert feedback == "tests/test_calc.py::test_add\ntests/test_io.py" and feedback in prompt
    assert "expected" not in prompt and "AssertionError" not in prompt
    prompt, feedback = parse("verify-retry:feedback=none").retry_prompt(PYTEST_OUTPUT)
    assert feedback == "" and "Verifier feedback" not in prompt
    prompt, feedback = parse("self-review").retry_prompt(PYTEST_OUTPUT)
    assert feedback == "" and prompt.startswith("Critically review your previous solution") and "test_" not in prompt


def test_the_loop_block_says_when_the_bar_was_first_passed_and_why_the_loop_stopped():
    rounds = [{"round": 0, "rewards": {"reward": 0.0}, "tokens": 100},
              {"round": 1, "rewards": None, "tokens": 250},
              {"round": 2, "rewards": {"reward": 1.0}, "tokens": 400}]
    assert summary(rounds, "passed_bar") == {
        "iterations_run": 3, "stop_reason": "passed_bar", "reward_trajectory": [0.0, None, 1.0],
        "first_pass_iteration": 2, "tokens_trajectory": [100, 250, 400], "tokens_to_pass": 400}
    assert summary(rounds[:2], "max_iterations")["first_pass_iteration"] is None
    assert summary([], None)["stop_reason"] == "error"
