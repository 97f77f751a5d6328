"""``bench regrade --review``: a stricter test reruns the rubric review gated by the new reward and compares the
combined score; result.json and the scoring revisions are never changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.integration.test_agent_pipeline import PYTHON_IMAGE, fake_agent_file
from tests.integration.test_review import IMAGE, RUBRIC
from tests.integration.test_review_scoring import TEST, _script
from tests.taskgen import make_task

STRICTER = '[ "$(cat /app/answer.txt 2>/dev/null)" = 43 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt'


def _answer(correct: int, clean: int) -> str:
    answer = json.dumps({"honest": {"outcome": "pass", "explanation": "h"},
                         "correct": {"score": correct, "explanation": "c"}, "clean": {"score": clean, "explanation": "k"}})
    return _script([{"op": "tool", "id": "a", "write": {"path": "/logs/agent/review.json", "content": answer}}])


@pytest.mark.docker
def test_regrade_review_gates_the_new_review_by_the_new_test(tmp_path: Path) -> None:
    task = make_task(tmp_path / "tasks", "answer", dockerfile=PYTHON_IMAGE, solve="echo 42 > /app/answer.txt",
                     test=TEST)
    (task / "verifier" / "rubric.json").write_text(json.dumps(RUBRIC))
    reviewer = fake_agent_file(tmp_path)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--job-name", "j",
                     "--freeze-workspace", "--reviewer-agent", str(reviewer), "--reviewer-image", IMAGE,
                     "--reviewer-agent-env", _answer(2, 0))
    assert done.returncode == 0, done.stdout + done.stderr
    job = jobs / "j"
    trial = next(job.glob("answer__*"))
    result_before = (trial / "result.json").read_bytes()
    first = json.loads((trial / "scoring" / "1.json").read_text())
    assert (first["rubric_reward"], first["decision"]) == (0.75, "presentable_with_revisions")  # 6/8, gates pass

    changed = tmp_path / "changed"
    shutil.copytree(tmp_path / "tasks", changed)
    (changed / "answer" / "verifier" / "test.sh").write_text("#!/bin/sh\n" + STRICTER + "\n")
    # the reviewer scores it higher now, (2·3 + 2·1)/8 = 1.0, but the new test fails: the combined score is 0
    regraded = run_bench("regrade", str(job), "--tasks-dir", str(changed), "--review", "--json",
                         "--reviewer-agent-env", _answer(2, 2))
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    summary = json.loads(regraded.stdout)
    assert summary["counts"]["review_changed"] == 1 and summary["counts"]["reviewed"] == 1
    row = summary["trials"][0]
    assert (row["original_reward"], row["reward"]) == (1.0, 0.0)
    assert row["review"]["before"]["rubric_reward"] == 0.75 and row["review"]["before"]["attempt"] == 1
    assert row["review"]["after"] == {"rubric_reward": 0.0, "decision": "not_publishable"}
    block = json.loads((trial / "regrade.json").read_text())["review"]
    assert block["after"]["raw_quality"] == 1.0 and block["after"]["gates"]["tests_passed"] is False
    assert block["verifier_reward"] == 0.0 and block["reviewer"]["agent"] == str(reviewer)  # the recorded reviewer
    assert block["rubric"]["source"] == "task:answer"
    assert (trial / "result.json").read_bytes() == result_before
    assert sorted(p.name for p in (trial / "scoring").iterdir()) == ["1.json"]

    table = run_bench("regrade", str(trial), "--tasks-dir", str(changed), "--review",
                      "--reviewer-agent-env", _script([{"op": "message", "text": "fine"}]))
    assert table.returncode == 1, table.stdout + table.stderr  # a reviewer error is a regrade without a score
    assert "reviewer_error (malformed_answer)" in table.stdout


def test_reviewer_flags_without_review_are_refused(tmp_path: Path) -> None:
    done = run_bench("regrade", str(tmp_path), "--reviewer-model", "m")
    assert done.returncode == 2 and "add --review" in done.stderr
