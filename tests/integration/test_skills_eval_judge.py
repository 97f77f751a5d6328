"""``bench skills eval --judge-model``: plain-sentence expectations judged by the verifier's llm-judge.

The fixture skill ``stamp-maker`` with one case of sentences only. The fake ACP agent runs the skill's
script from where skills are deployed, so with the skill ``stamped.txt`` carries the house stamp and
without it the file is empty. The judge is the scripted Anthropic double, reached through the model
gateway: it meets a criterion when the phrase the sentence quotes is in the deliverables, so the
with-skill side gets a pass verdict and the baseline a fail verdict.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.scripted_anthropic import ScriptedAnthropic
from tests.integration.test_agent_pipeline import fake_agent_file
from tests.integration.test_skills_eval_cli import SKILL, STEPS

REAL_KEY = "sk-ant-judge-real-key-5d1c0123456789abcdef"
EVALS = {"skill_name": "stamp-maker", "defaults": {"image": "benchflow/python:3.11-bookworm", "timeout_sec": 120},
         "evals": [{"id": "stamped", "prompt": "Stamp seed.txt with the house stamp into stamped.txt.",
                    "expected_output": "stamped.txt holds the stamp and the seed", "files": ["evals/files/seed.txt"],
                    "expectations": ['stamped.txt starts with the house stamp "STAMP-7c1e seed-content"']},
                   {"id": "mixed", "prompt": "Write hello into hello.txt.",
                    "expectations": [{"type": "file_matches", "path": "hello.txt", "pattern": "^hello$"},
                                     "The agent was cheerful"]}]}


def _skill(tmp_path: Path) -> Path:
    skill = tmp_path / "stamp-maker"
    shutil.copytree(SKILL, skill)
    (skill / "evals" / "evals.json").write_text(json.dumps(EVALS))
    return skill


@pytest.mark.docker
def test_sentences_are_judged_through_the_gateway_pass_and_fail(tmp_path: Path) -> None:
    agent = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [STEPS]})})
    jobs = tmp_path / "jobs"
    with ScriptedAnthropic() as judge:
        done = run_bench("skills", "eval", str(_skill(tmp_path)), "--agent", str(agent), "--sandbox", "docker",
                         "--concurrency", "2", "--jobs-dir", str(jobs), "--judge-model", "claude-sonnet-4-6",
                         "--export-gepa", "--json", timeout=900,
                         env={"ANTHROPIC_API_KEY": REAL_KEY, "ANTHROPIC_BASE_URL": judge.url})
        verdicts = [c for c in judge.calls if c.kind == "verdict"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "case mixed is scored by its checks; its sentences are not judged" in done.stderr
    report = json.loads(done.stdout)
    assert report["judge_model"] == "claude-sonnet-4-6" and report["unscored_cases"] == []
    (row,) = report["results"]
    cases = {c["id"]: c for c in row["cases"]}
    assert {k: (c["scored_by"], c["with_skill"], c["baseline"]) for k, c in cases.items()} == {
        "stamped": ("judge", 1.0, 0.0), "mixed": ("checks", 1.0, 1.0)}
    assert row["lift"]["pass_rate_delta"] == pytest.approx(0.5)
    # one judge call per judged trial, the model id and the real key as the provider gets them
    assert len(verdicts) == 2 and {c.model for c in verdicts} == {"claude-sonnet-4-6"}
    for side, score in (("with-skill", 1.0), ("baseline", 0.0)):
        trial = Path(cases["stamped"]["trials"][side])
        details = json.loads((trial / "verifier" / "reward-details.json").read_text())
        assert details["source"] == "llm-judge" and details["model"] == "claude-sonnet-4-6"
        assert [(c["name"], c["score"]) for c in details["criteria"]] == [("expectation-1", score)]
        assert details["usage"]["n_requests"] == 1  # metered by the gateway
        assert (trial / "verifier" / "judge_llm_trajectory.jsonl").is_file()
    trace = json.loads((Path(report["eval_dir"]) / "gepa" / "traces" / f"stamped-{row['label']}-without.json").read_text())
    assert trace["score"] == 0.0 and trace["feedback"].startswith("FAIL expectation-1 (0.0): missing STAMP-7c1e")
    # the key was read from the environment, never written
    for path in Path(report["eval_dir"]).rglob("*"):
        if path.is_file():
            assert REAL_KEY not in path.read_text(errors="replace"), path


def test_judge_model_without_a_key_is_a_one_line_exit_2(tmp_path: Path) -> None:
    env = {name: "" for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    done = run_bench("skills", "eval", str(_skill(tmp_path)), "--agent", "nop", "--judge-model", "claude-sonnet-4-6",
                     "--jobs-dir", str(tmp_path / "jobs"), env=env)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--judge-model claude-sonnet-4-6" in done.stderr
    assert not (tmp_path / "jobs").exists()
