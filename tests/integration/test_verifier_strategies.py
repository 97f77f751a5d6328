"""verifier.md strategies end to end on Docker: each fixture task's oracle scores only when its
strategy really ran (the judge saw the deliverables, reward-kit got its environment, ...)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, run_bench
from tests.doubles.fake_model_server import FakeModelServer

pytestmark = pytest.mark.docker

REAL_KEY = "sk-ant-judge-real-key-0123456789abcdef"


def run_task(tmp_path: Path, name: str, *extra: str, env: dict[str, str] | None = None) -> tuple[dict, Path]:
    tasks = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS / name, tasks / name)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tasks / name), "-s", "docker", "--jobs-dir", str(jobs), *extra, env=env)
    assert done.returncode in (0, 1), done.stderr
    result_file = next(jobs.rglob("result.json"))
    return json.loads(result_file.read_text()), result_file.parent


@pytest.fixture
def judge():
    with FakeModelServer() as server:
        yield server


def judge_env(server: FakeModelServer) -> dict[str, str]:
    return {"JUDGE_API_KEY": REAL_KEY, "JUDGE_BASE_URL": server.url, "JUDGE_OPENAI_URL": server.url + "/v1"}


ALLOW = ("--allow-task-env", "JUDGE_API_KEY", "--allow-task-env", "JUDGE_BASE_URL",
         "--allow-task-env", "JUDGE_OPENAI_URL")


def test_llm_judge_scores_the_deliverables_through_the_gateway(tmp_path: Path, judge: FakeModelServer) -> None:
    judge.content = ('Here is my verdict:\n```json\n{"criteria": [{"name": "correctness", "score": 1, '
                     '"reasoning": "says 42"}, {"name": "style", "score": 0.5, "reasoning": "terse"}]}\n```')
    result, trial = run_task(tmp_path, "judge-llm", *ALLOW, env=judge_env(judge))
    assert result["verifier_error"] is None, result["verifier_error"]
    assert result["rewards"]["reward"] == pytest.approx((3 * 1 + 1 * 0.5) / 4)
    # the deliverables were copied out and shown to the judge
    assert "answer-marker-7f3a" in (trial / "verifier" / "deliverables" / "report.md").read_text()
    calls = [r for r in judge.requests if r["path"] == "/v1/messages"]
    assert len(calls) == 1
    prompt = calls[0]["body"]["messages"][0]["content"]
    assert "answer-marker-7f3a" in prompt and "The report must mention 42." in prompt
    assert calls[0]["headers"]["x-api-key"] == REAL_KEY  # the key from verifier.env went upstream only
    details = json.loads((trial / "verifier" / "reward-details.json").read_text())
    assert details["source"] == "llm-judge" and details["aggregate"]["method"] == "weighted_mean"
    assert [c["name"] for c in details["criteria"]] == ["correctness", "style"]
    assert details["usage"]["n_requests"] == 1 and details["usage"]["total_tokens"] > 0
    record = (trial / "verifier" / "judge_llm_trajectory.jsonl").read_text()
    assert "answer-marker-7f3a" in record
    for path in trial.rglob("*"):
        if path.is_file():
            assert REAL_KEY not in path.read_text(errors="replace"), path


def test_llm_judge_without_a_key_is_a_verifier_error_not_a_zero(tmp_path: Path) -> None:
    result, _trial = run_task(tmp_path, "judge-llm")
    assert result["rewards"] is None
    assert "no provider key in verifier.env" in result["verifier_error"]
    assert result["verifier_error_category"] == "verifier_failure"


def test_llm_judge_reply_missing_a_criterion_is_a_verifier_error(tmp_path: Path, judge: FakeModelServer) -> None:
    judge.content = '{"criteria": [{"name": "correctness", "score": 1}]}'
    result, _trial = run_task(tmp_path, "judge-llm", *ALLOW, env=judge_env(judge))
    assert result["rewards"] is None
    assert "no score for criterion 'style'" in result["verifier_error"]


def test_agent_judge_reads_declared_inputs_with_the_role_prompt(tmp_path: Path, judge: FakeModelServer) -> None:
    judge.content = '{"score": 0.7, "reasoning": "answered 42"}'
    result, trial = run_task(tmp_path, "judge-agent", *ALLOW, env=judge_env(judge))
    assert result["verifier_error"] is None, result["verifier_error"]
    assert result["rewards"]["reward"] == pytest.approx(0.7)
    assert result["rewards"]["metadata"] == {"source": "agent-judge", "strategy": "review", "role": "reviewer",
                                             "model": "gpt-4o"}
    calls = [r for r in judge.requests if r["path"] == "/v1/chat/completions"]
    assert len(calls) == 1 and calls[0]["headers"]["authorization"] == f"Bearer {REAL_KEY}"
    prompt = calls[0]["body"]["messages"][1]["content"]
    for marker in ("reviewer-role-marker-0d4e", "oracle-log-marker-91c2", "answer-marker-5be1"):
        assert marker in prompt, marker
    assert (trial / "verifier" / "agent-judge-inputs" / "1-answer.txt").is_file()


def test_ors_episode_takes_the_terminal_record(tmp_path: Path) -> None:
    result, trial = run_task(tmp_path, "ors-episode")
    assert result["verifier_error"] is None, result["verifier_error"]
    assert result["rewards"]["reward"] == pytest.approx(0.9)
    assert result["rewards"]["metadata"]["ors"]["terminal_index"] == 2
    details = json.loads((trial / "verifier" / "reward-details.json").read_text())
    assert details["aggregate"]["method"] == "ors-terminal"


def test_ors_episode_nop_has_no_records_and_errors(tmp_path: Path) -> None:
    result, _trial = run_task(tmp_path, "ors-episode", "-a", "nop")
    assert result["rewards"] is None and "ors-episode" in result["verifier_error"]


def test_reward_kit_gets_its_environment_and_a_strict_aggregate(tmp_path: Path) -> None:
    result, trial = run_task(tmp_path, "reward-kit")
    assert result["verifier_error"] is None, (trial / "verifier" / "test-stdout.txt").read_text()
    assert result["rewards"]["reward"] == pytest.approx((2 * 1 + 0.5) / 3)
    assert result["rewards"]["aggregate"]["criteria"] == ["correct", "tidy"]
    manifest = json.loads((trial / "verifier" / "reward-kit-manifest.json").read_text())
    assert manifest["root"] == "kit" and manifest["entrypoint"] == "reward.py"


def test_script_strategy_and_rubric_combine(tmp_path: Path) -> None:
    result, trial = run_task(tmp_path, "rubric-combine")
    assert result["verifier_error"] is None, (trial / "verifier" / "test-stdout.txt").read_text()
    # the document's aggregate_policy (mean) would give 0.75; rubric.combine weighs 3:1
    assert result["rewards"]["reward"] == pytest.approx(0.875)
    assert [(i["name"], i["weight"]) for i in result["rewards"]["rubric"]] == [("correctness", 3.0), ("style", 1.0)]
    nop, _ = run_task(tmp_path / "nop", "rubric-combine", "-a", "nop")
    assert nop["rewards"]["reward"] == pytest.approx(0.125)
