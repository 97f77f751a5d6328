"""The static ``acceptance`` level: declared evidence cross-checked against its JSON files and pins."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from benchflow.tasks import check_task
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

ARTIFACTS = {
    "evidence/oracle-runs.json": {"runs": [{"reward": 1.0}, {"reward": 1}]},
    "evidence/stability.json": {"reruns": [{"reward": 1.0}] * 3 + [{"reward": 0.0}]},
    "evidence/review.json": {"anti_cheat": {"verdict": "pass"}, "instruction_alignment": {"verdict": "pass"}},
    "evidence/calibration.json": {"results": {"no_op": 0.0, "known_bad": 0.1, "partial": 0.5, "reference": 1.0}},
}


def evidence_block(task: Path) -> dict:
    return {
        "oracle_runs": {"count": 2, "report": "evidence/oracle-runs.json"},
        "verifier_reruns": {"count": 4, "flake_rate": 0.25, "max_flake_rate": 0.3,
                            "report": "evidence/stability.json"},
        "review": {"anti_cheat": "pass", "instruction_alignment": "pass", "report": "evidence/review.json"},
        "calibration": {"bounds": {"no_op": {"max_reward": 0.0}, "known_bad": {"max_reward": 0.2},
                                   "partial": {"min_reward": 0.2, "max_reward": 0.8},
                                   "reference": {"min_reward": 1.0}},
                        "report": "evidence/calibration.json"},
        "files": {rel: "sha256:" + hashlib.sha256((task / rel).read_bytes()).hexdigest() for rel in ARTIFACTS},
    }


def write_evidence(task: Path, block: dict) -> None:
    text = (task / "task.md").read_text()
    head, body = text.split("---\n\n", 1)
    extra = yaml.safe_dump({"benchflow": {"evidence": block}}, sort_keys=False)
    (task / "task.md").write_text(head + extra + "---\n\n" + body)


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """A publication-grade task with complete, consistent acceptance evidence."""
    task = make_task(tmp_path, "accepted", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    (task / "verifier" / "verifier.md").write_text(
        "---\nverifier:\n  strategies:\n    main: {type: script, command: ./test.sh}\n"
        "  rubric:\n    dimensions:\n      task_success: {weight: 1}\n"
        "  outputs:\n    reward_json: /logs/verifier/reward.json\n---\n")
    (task / "verifier" / "rubrics").mkdir()
    (task / "verifier" / "rubrics" / "main.md").write_text("Score 1 when hello.txt says hello.\n")
    (task / "evidence").mkdir()
    for rel, doc in ARTIFACTS.items():
        (task / rel).write_text(json.dumps(doc))
    return task


def test_complete_evidence_is_accepted(task: Path) -> None:
    write_evidence(task, evidence_block(task))
    report = check_task(task, level="acceptance")
    assert report.ok, report.issues


def test_acceptance_includes_publication_grade(task: Path) -> None:
    write_evidence(task, evidence_block(task))
    (task / "verifier" / "verifier.md").unlink()
    assert any(i.startswith("verifier/verifier.md: missing") for i in check_task(task, level="acceptance").issues)


def test_no_evidence_at_all(task: Path) -> None:
    assert check_task(task, level="acceptance").issues == [
        "task.md: benchflow.evidence: missing; declare oracle_runs, verifier_reruns, review, calibration and files"]


def test_declared_numbers_must_match_the_files(task: Path) -> None:
    block = evidence_block(task)
    block["oracle_runs"]["count"] = 3
    block["verifier_reruns"]["flake_rate"] = 0.0
    block["review"]["anti_cheat"] = "fail"
    block["calibration"]["bounds"]["partial"] = {"min_reward": 0.6}
    del block["calibration"]["bounds"]["known_bad"]
    write_evidence(task, block)
    issues = check_task(task, level="acceptance").issues
    expected = [
        "evidence/oracle-runs.json: holds 2 oracle runs, but oracle_runs.count says 3",
        "evidence/stability.json: the reruns give a flake rate of 0.25, but verifier_reruns.flake_rate says 0",
        "task.md: benchflow.evidence.review.anti_cheat: 'fail'; the anti-cheat review must pass",
        "evidence/review.json: anti_cheat verdict is 'pass', but task.md declares 'fail'",
        "task.md: benchflow.evidence.calibration.bounds.known_bad: give min_reward and/or max_reward",
        "evidence/calibration.json: partial scored 0.5, outside its bounds {'min_reward': 0.6}",
    ]
    for prefix in expected:
        assert any(i.startswith(prefix) for i in issues), (prefix, issues)
    assert len(issues) == len(expected)


def test_flaky_verifier_and_failed_oracle_run(task: Path) -> None:
    (task / "evidence" / "oracle-runs.json").write_text(json.dumps({"runs": [{"reward": 1.0}, {"reward": 0.5}]}))
    block = evidence_block(task)
    block["verifier_reruns"]["max_flake_rate"] = 0.1
    write_evidence(task, block)
    issues = check_task(task, level="acceptance").issues
    assert any("1 oracle run(s) scored below 1.0 (0.5)" in i for i in issues)
    assert any("the verifier is flaky (flake rate 0.25 > max 0.1)" in i for i in issues)


def test_pins_cover_every_evidence_file_and_match(task: Path) -> None:
    block = evidence_block(task)
    del block["files"]["evidence/review.json"]
    block["files"]["evidence/gone.json"] = "sha256:00"
    write_evidence(task, block)
    (task / "evidence" / "calibration.json").write_text(json.dumps(ARTIFACTS["evidence/calibration.json"]) + "\n")
    issues = check_task(task, level="acceptance").issues
    assert any(i.startswith("task.md: benchflow.evidence.files: evidence/review.json is not pinned") for i in issues)
    assert any(i.startswith("task.md: benchflow.evidence.files: evidence/gone.json is pinned but missing")
               for i in issues)
    assert any(i.startswith("evidence/calibration.json: its SHA-256 is sha256:") for i in issues)
    assert len(issues) == 3


def test_missing_and_unreadable_reports(task: Path) -> None:
    block = evidence_block(task)
    block["review"]["report"] = "evidence/nope.json"
    block["calibration"]["report"] = "../outside.json"
    (task / "evidence" / "oracle-runs.json").write_text("{not json")
    write_evidence(task, block)
    issues = check_task(task, level="acceptance").issues
    assert any(i.startswith("evidence/nope.json: missing") for i in issues)
    assert any(i.startswith("task.md: benchflow.evidence.calibration.report: give the task-relative") for i in issues)
    assert any(i.startswith("evidence/oracle-runs.json: not readable JSON") for i in issues)
