"""``bench run --loop-strategy``: rounds of the agent, each soft-verified in the trial's sandbox, re-prompted
until the soft verifier passes or the retries are spent; the trial is scored by its final verifier.

The fixture's oracle writes a wrong draft for the task's prompt and the right answer for a retry or
self-review prompt, logging every prompt it got and whether the verifier's files were in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS

TASK = FIXTURE_TASKS / "loop-retry"


def _trial(jobs: Path) -> Path:
    [result] = list(jobs.rglob("result.json"))
    return result.parent


def _rounds(trial: Path) -> list[dict]:
    return [json.loads(line) for line in (trial / "loop" / "iterations.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("sandbox", [pytest.param("docker", marks=pytest.mark.docker),
                                     pytest.param("local", marks=pytest.mark.local_sandbox)])
def test_verify_retry_re_prompts_with_failing_test_names_until_the_soft_verifier_passes(bench, tmp_path, sandbox):
    done = bench("run", str(TASK), "-s", sandbox, "--jobs-dir", str(tmp_path), "--loop-strategy",
                 "verify-retry:k=3,feedback=names")
    assert done.returncode == 0, done.stderr + done.stdout
    trial = _trial(tmp_path)
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0 and result["error"] is None
    assert result["loop"] == {"strategy": "verify-retry", "params": {"k": 3, "feedback": "names"},
                              "iterations_run": 2, "stop_reason": "passed_bar", "reward_trajectory": [0.0, 1.0],
                              "first_pass_iteration": 1, "tokens_trajectory": [None, None], "tokens_to_pass": None}
    assert json.loads((trial / "config.json").read_text())["loop"] == {
        "strategy": "verify-retry", "params": {"k": 3, "feedback": "names"}}
    first, second = _rounds(trial)
    assert first["prompt"] is None and first["rewards"] == {"reward": 0.0}  # the task's own prompt, soft-failed
    assert "FAILED tests/test_answer.py::test_answer[expected-done]" in \
        (trial / "loop/00/verifier/test-stdout.txt").read_text()
    # the retry prompt names the failing test, and nothing of the assertion or the expected value
    assert second["feedback"] == "tests/test_answer.py::test_answer"
    assert second["prompt"].startswith("Your previous attempt did not pass verification.")
    assert "tests/test_answer.py::test_answer" in second["prompt"]
    assert "expected-done" not in second["prompt"] and "AssertionError" not in second["prompt"]
    # the final verifier scored the trial, and the oracle's log shows both rounds: the retry ran after the
    # soft verification's files were removed again
    final = (trial / "verifier" / "test-stdout.txt").read_text()
    assert final.count("prompt: ") == 2 and final.count("verifier files: none\n") == 2, final
    assert "prompt: Your previous attempt did not pass verification." in final


@pytest.mark.docker
def test_self_review_asks_the_agent_to_review_its_own_work_with_no_verifier_signal(bench, tmp_path):
    done = bench("run", str(TASK), "-s", "docker", "--jobs-dir", str(tmp_path), "--loop-strategy", "self-review:k=1")
    assert done.returncode == 0, done.stderr + done.stdout
    trial = _trial(tmp_path)
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0
    assert (result["loop"]["stop_reason"], result["loop"]["reward_trajectory"]) == ("passed_bar", [0.0, 1.0])
    _, second = _rounds(trial)
    assert second["prompt"].startswith("Critically review your previous solution") and second["feedback"] == ""
    assert "test_answer" not in second["prompt"]


@pytest.mark.docker
def test_the_loop_stops_when_its_retries_are_spent_and_without_one_the_draft_is_final(bench, tmp_path):
    spent = bench("run", str(TASK), "-s", "docker", "--jobs-dir", str(tmp_path / "nop"), "-a", "nop",
                  "--loop-strategy", "verify-retry:k=2,feedback=counts")
    assert spent.returncode == 0, spent.stderr + spent.stdout
    trial = _trial(tmp_path / "nop")
    loop = json.loads((trial / "result.json").read_text())["loop"]
    assert (loop["iterations_run"], loop["stop_reason"], loop["first_pass_iteration"]) == (3, "max_iterations", None)
    assert [r["feedback"] for r in _rounds(trial)] == [None, "1 failed in 0.01s", "1 failed in 0.01s"]

    plain = bench("run", str(TASK), "-s", "docker", "--jobs-dir", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stderr + plain.stdout
    trial = _trial(tmp_path / "plain")
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 0.0 and result["loop"] is None and not (trial / "loop").exists()


def test_a_wrong_strategy_is_refused_in_one_line_and_a_task_with_turns_of_its_own_by_the_run_card(bench, tmp_path):
    wrong = bench("run", str(TASK), "--jobs-dir", str(tmp_path), "--loop-strategy", "verify-retry:k=0")
    assert wrong.returncode == 2 and wrong.stderr.strip().count("\n") == 0
    assert "--loop-strategy 'verify-retry:k=0': k must be a whole number of retries" in wrong.stderr
    assert not tmp_path.exists() or not list(tmp_path.iterdir())
    steps = bench("run", str(FIXTURE_TASKS / "multi-step-gate"), "--dry-run", "--loop-strategy", "self-review")
    assert steps.returncode == 1
    assert "refuse: multi-step-gate: --loop-strategy re-prompts the agent, and a multi-step task's steps already do" \
        in steps.stderr


@pytest.mark.docker
def test_each_round_of_a_model_calling_agent_is_a_new_session_through_the_gateway(bench, tmp_path):
    """The fake ACP agent (non-root, fenced after each round) asks the model with the prompt it got, then writes
    a draft, or the answer when it finds its draft: each round is its own session, reaching the model
    through the job's gateway; the usage of both rounds is the trial's."""
    from tests.doubles.fake_model_server import OUTPUT, FakeModelServer
    from tests.integration.test_agent_pipeline import PYTHON_IMAGE, UPSTREAM_KEY, fake_agent_file
    from tests.taskgen import make_task

    make_task(tmp_path / "tasks", "answer", dockerfile=PYTHON_IMAGE,
              test='[ "$(cat /app/answer.txt)" = done ] && echo 1 > /logs/verifier/reward.txt '
                   '|| { echo "FAILED tests/test_answer.py::test_done - not done"; echo 0 > /logs/verifier/reward.txt; }')
    steps = [{"op": "ask_model", "api": "openai"},
             {"op": "tool", "id": "w", "run": "if [ -f answer.txt ]; then printf done > answer.txt; "
                                               "else printf draft > answer.txt; fi"}]
    with FakeModelServer() as upstream:
        done = bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"),
                     "-a", str(fake_agent_file(tmp_path)), "-m", "gpt-4o-mini", "--retry-attempts", "0",
                     "--loop-strategy", "verify-retry:k=2",
                     "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps({'prompts': [steps]})}",
                     env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"})
        asked = [r["body"]["messages"][-1]["content"] for r in upstream.requests if r["path"].endswith("/completions")]
    assert done.returncode == 0, done.stderr + done.stdout
    trial = _trial(tmp_path / "jobs")
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0, result["error"]
    assert (result["loop"]["iterations_run"], result["loop"]["stop_reason"]) == (2, "passed_bar")
    assert len(asked) == 2 and asked[0].startswith("Do the task.")
    assert asked[1].startswith("Your previous attempt did not pass verification.") and "test_done" in asked[1]
    assert result["agent_result"]["n_output_tokens"] == 2 * OUTPUT  # both rounds' calls, summed
    tokens = result["loop"]["tokens_trajectory"]
    assert tokens[0] > 0 and tokens[1] == 2 * tokens[0]
    exchanges = (trial / "trajectory" / "llm_trajectory.jsonl").read_text().splitlines()
    assert len(exchanges) == 2
    assert UPSTREAM_KEY not in "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())

