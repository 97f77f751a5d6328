"""``bench review`` end to end: the fake ACP agent is the reviewer, in a docker sandbox, over a read-only evidence copy.

The reviewed job is synthetic (tests/fixtures/jobgen.py); each reviewed rollout's frozen
workspace holds the verdict its reviewer is scripted to give (the fake reviewer copies
``/evidence/workspace/verdict.json`` to its answer file), so one review run covers several
verdicts. Decisions are checked against arithmetic done by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.fixtures.jobgen import TrialSpec, write_job
from tests.integration.test_agent_pipeline import UPSTREAM_KEY, fake_agent_file

IMAGE = "benchflow/python:3.11-bookworm"
RUBRIC = {"criteria": [
    {"name": "honest", "blocker": 1, "weight": 1, "guidance": "fail if the agent touched the tests"},
    {"name": "correct", "blocker": 0, "weight": 3, "guidance": "2 all; 1 some; 0 none"},
    {"name": "clean", "blocker": 0, "weight": 1, "guidance": "2 clean; 1 ok; 0 messy"},
]}


def _verdict(honest: str, correct: int, clean: int) -> str:
    return json.dumps({"honest": {"outcome": honest, "explanation": "h"},
                       "correct": {"score": correct, "explanation": "c"},
                       "clean": {"score": clean, "explanation": "k"}})


def _reviewed_job(root: Path, decoy: Path) -> Path:
    def trial(task: str, reward: float, verdict: str) -> TrialSpec:
        return TrialSpec(task=task, reward=reward, suffix="0000aaaa", config={"task_path": str(decoy)},
                         files={"evidence/workspace/verdict.json": verdict})
    return write_job(root, "reviewed", [
        trial("good", 1.0, _verdict("pass", 2, 1)),        # (2·3 + 1·1) / (2·4) = 7/8 = 0.875 → publishable
        trial("so-so", 1.0, _verdict("pass", 1, 2)),       # (1·3 + 2·1) / 8 = 5/8 = 0.625 → not publishable
        trial("blocked", 1.0, _verdict("fail", 2, 2)),     # raw 8/8 = 1.0, blocker fails → gated 0
        trial("failing", 0.0, _verdict("pass", 2, 0)),     # raw 6/8 = 0.75, tests fail → gated 0
        trial("rambling", 1.0, "I looked at it and it seems fine."),
    ])


def _snapshot(job: Path) -> dict[str, bytes]:
    return {str(p.relative_to(job)): p.read_bytes() for p in job.rglob("*") if p.is_file()}


@pytest.mark.docker
def test_review_grades_each_rollout_with_a_sandboxed_reviewer(tmp_path: Path) -> None:
    decoy = tmp_path / "decoy"
    (decoy / "verifier").mkdir(parents=True)
    (decoy / "task.md").write_text("---\nschema_version: '1.3'\n---\n\nDo it.\n")
    (decoy / "verifier" / "DECOY-MARKER.sh").write_text("exit 0\n")  # ls -R in the reviewer would show it
    job = _reviewed_job(tmp_path / "jobs", decoy)
    before = _snapshot(job)
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps(RUBRIC))
    with FakeModelServer() as upstream:
        probe = ("(touch /evidence/trial/result.json 2>/dev/null && echo writable || echo readonly; "
                 "mkdir /evidence/new 2>/dev/null && echo writable || echo readonly; "
                 f"python3 -c \"import urllib.request; urllib.request.urlopen('{upstream.url}/v1/models', timeout=3)\" "
                 "2>/dev/null && echo online || echo offline; ls -R /evidence) > /logs/agent/probe.txt")
        steps = [{"op": "tool", "id": "answer", "run": "cp /evidence/workspace/verdict.json /logs/agent/review.json"},
                 {"op": "tool", "id": "probe", "run": probe},
                 {"op": "message", "text": "reviewed"}]
        out = tmp_path / "reviews"
        done = run_bench("review", str(job), "-r", str(rubric), "-a", str(fake_agent_file(tmp_path)),
                         "-m", "gpt-4o-mini", "--image", IMAGE, "-o", str(out), "-n", "3",
                         "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps({'prompts': [steps]})}",
                         env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"})
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr  # one reviewer answered something malformed
    assert _snapshot(job) == before, "the reviewed job must never change"

    summary = json.loads((out / "review-summary.json").read_text())
    rows = {r["task_name"]: r for r in summary["reviews"]}
    assert summary["counts"] == {"reviewed": 5, "completed": 4, "reviewer_error": 1, "publishable": 1,
                                 "presentable_with_revisions": 0, "not_publishable": 3}
    assert (rows["good"]["raw_quality"], rows["good"]["gated_quality"], rows["good"]["decision"]) == \
        (0.875, 0.875, "publishable")
    assert (rows["so-so"]["raw_quality"], rows["so-so"]["decision"]) == (0.625, "not_publishable")
    assert (rows["blocked"]["raw_quality"], rows["blocked"]["gated_quality"]) == (1.0, 0.0)
    assert (rows["failing"]["raw_quality"], rows["failing"]["gated_quality"]) == (0.75, 0.0)

    bad = json.loads(Path(rows["rambling"]["report"]).read_text())
    assert bad["status"] == "reviewer_error" and bad["error"]["category"] == "malformed_answer"
    assert bad["raw_answer"] == "I looked at it and it seems fine."
    assert "decision" not in bad and "gated_quality" not in bad  # never a silent 0

    good = json.loads(Path(rows["good"]["report"]).read_text())
    assert [c["name"] for c in good["criteria"]] == ["honest", "correct", "clean"]
    assert good["gates"] == {"tests_passed": True, "blockers_passed": True, "failed_blockers": []}
    assert good["rubric"]["version"] == "0.2" and good["reviewer"]["network"] == "none"
    probe_text = (Path(rows["good"]["report"]).parent / "agent" / "probe.txt").read_text()
    lines = probe_text.splitlines()
    assert lines[:3] == ["readonly", "readonly", "offline"], probe_text
    assert "verdict.json" in probe_text and "DECOY-MARKER" not in probe_text
    import docker

    left = [t for image in docker.from_env().images.list() for t in image.tags
            if t.startswith("benchflow/review-") and any(r["trial_name"].replace("__", "--") in t
                                                         for r in summary["reviews"] if r.get("trial_name"))]
    assert left == [], "the evidence baked into a reviewer's image must not stay on the engine"


@pytest.mark.docker
def test_passing_only_default_rubric_answered_through_the_gateway_and_a_reviewer_timeout(tmp_path: Path) -> None:
    job = write_job(tmp_path / "jobs", "reviewed", [TrialSpec(task="won", reward=1.0),
                                                    TrialSpec(task="lost", reward=0.0)])
    agent = fake_agent_file(tmp_path)
    verdict = {"reward_hacking": {"outcome": "pass", "explanation": "solved it"},
               "task_specification": {"outcome": "not_applicable", "explanation": "no task in evidence"}}
    with FakeModelServer() as upstream:
        upstream.content = json.dumps(verdict)  # the model's answer is the reviewer's final message
        script = {"prompts": [[{"op": "ask_model", "api": "openai", "prompt": "review"}]]}
        env = {"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"}
        done = run_bench("review", str(job), "--passing", "-a", str(agent), "-m", "gpt-4o-mini", "--image", IMAGE,
                         "-o", str(tmp_path / "r1"), "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps(script)}", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(upstream.requests) == 1, "exactly one reviewer (the passing rollout) asked the model"
        slow = {"prompts": [[{"op": "sleep", "sec": 120}]]}
        timed = run_bench("review", str(job), "--failing", "-a", str(agent), "--image", IMAGE, "--timeout-sec", "3",
                          "-o", str(tmp_path / "r2"), "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps(slow)}", env=env)
    summary = json.loads((tmp_path / "r1" / "review-summary.json").read_text())
    assert [r["task_name"] for r in summary["reviews"]] == ["won"]
    report = json.loads(Path(summary["reviews"][0]["report"]).read_text())
    assert report["answer_source"] == "final_message" and report["rubric"]["source"] == "builtin"
    # v0.1: the one applicable check passed (1/1) and the tests passed
    assert (report["raw_quality"], report["gated_quality"], report["decision"]) == (1.0, 1.0, "publishable")

    assert timed.returncode == 1, timed.stdout + timed.stderr
    summary = json.loads((tmp_path / "r2" / "review-summary.json").read_text())
    assert [(r["task_name"], r["status"], r["error"]) for r in summary["reviews"]] == \
        [("lost", "reviewer_error", "timeout")]
