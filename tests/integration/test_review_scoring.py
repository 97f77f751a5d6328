"""``bench run --reviewer-*`` scores trials of a task with a rubric; ``bench eval score`` retries a failed review."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.integration.test_agent_pipeline import PYTHON_IMAGE, fake_agent_file
from tests.integration.test_review import IMAGE, RUBRIC
from tests.taskgen import make_task

TEST = '[ "$(cat /app/answer.txt 2>/dev/null)" = 42 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt'


def _script(steps: list[dict]) -> str:
    return "FAKE_ACP_SCRIPT=" + json.dumps({"prompts": [steps]})


@pytest.mark.docker
def test_run_review_revision_then_eval_score_retries_the_failed_reviewer(tmp_path: Path) -> None:
    task = make_task(tmp_path / "tasks", "answer", dockerfile=PYTHON_IMAGE, solve="echo 42 > /app/answer.txt",
                     test=TEST)
    (task / "verifier" / "rubric.json").write_text(json.dumps(RUBRIC))
    reviewer = fake_agent_file(tmp_path)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                     "--reviewer-agent", str(reviewer), "--reviewer-image", IMAGE,
                     "--reviewer-agent-env", _script([{"op": "message", "text": "Looks good to me!"}]))
    assert done.returncode == 0, done.stdout + done.stderr
    trial = next(p.parent for p in jobs.rglob("result.json") if "/.review/" not in str(p))
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"] == {"reward": 1.0}  # the verifier's reward stands beside the rubric's
    first = json.loads((trial / "scoring" / "1.json").read_text())
    assert first["status"] == "reviewer_error" and first["error"]["category"] == "malformed_answer"
    assert first["raw_answer"] == "Looks good to me!" and first["rubric_reward"] is None
    assert result["scoring"] == {"current": "scoring/1.json", "attempt": 1, "status": "reviewer_error",
                                 "rubric_reward": None, "decision": None}

    answer = json.dumps({"honest": {"outcome": "pass", "explanation": "h"},
                         "correct": {"score": 2, "explanation": "c"}, "clean": {"score": 0, "explanation": "k"}})
    good = _script([{"op": "tool", "id": "a", "write": {"path": "/logs/agent/review.json", "content": answer}}])
    retried = run_bench("eval", "score", str(trial), "--tasks-root", str(tmp_path / "tasks"),
                        "--reviewer-agent-env", good)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    second = json.loads((trial / "scoring" / "2.json").read_text())
    # (2·3 + 0·1) / (2·(3+1)) = 6/8 = 0.75; tests and the blocker pass
    assert (second["status"], second["rubric_reward"], second["decision"]) == \
        ("completed", 0.75, "presentable_with_revisions")
    assert second["reviewer"]["agent"] == str(reviewer) and second["trigger"] == "eval score"
    result = json.loads((trial / "result.json").read_text())
    assert result["scoring"]["current"] == "scoring/2.json" and result["rewards"] == {"reward": 1.0}
    assert json.loads((trial / "scoring" / "1.json").read_text()) == first  # revisions are never rewritten

    again = run_bench("eval", "score", str(trial), "--tasks-root", str(tmp_path / "tasks"))
    assert again.returncode == 0 and "already completed" in again.stdout
    assert not (trial / "scoring" / "3.json").exists()
