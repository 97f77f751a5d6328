"""load_job / load_trial on synthetic job folders in the contract layout (0.10 and 0.7)."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest
from fixtures.jobgen import TrialSpec, write_job, write_trial

import benchflow as bf
from benchflow.errors import ConfigError, JobFolderError
from benchflow.jobs.layout import JobPaths
from benchflow.results.reader import find_jobs


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return write_job(tmp_path, "job", [
        TrialSpec("pass", 1.0, suffix="00000001"),
        TrialSpec("fail", 0.0, suffix="00000002"),
        TrialSpec("idle", None, error="Agent idle for 600s with no new tool call", suffix="00000003"),
        TrialSpec("verr", None, verifier_error="Verifier crashed: exit 2", suffix="00000004"),
        TrialSpec("timeout-scored", 1.0, error="Agent prompt exceeded wall-clock budget 900s",
                  error_category="timeout", suffix="00000005"),
        TrialSpec("running", finished=False, suffix="00000006"),
        TrialSpec("oracle-ctl", 1.0, agent="oracle", suffix="00000007"),
        # a retry: the older attempt errored, the newer one scored
        TrialSpec("retried", None, error="Connection reset", suffix="00000008", finished_at="2026-04-22 09:00:00"),
        TrialSpec("retried", 0.0, suffix="00000009", finished_at="2026-04-22 11:00:00"),
    ], summary={"agent": "claude-agent-acp", "model": "claude-haiku-4-5", "environment": "docker"})


def by_task(doc):
    return {t.task_name: t for t in doc.trials}


def test_denominators_and_outcomes(job):
    doc = bf.load_job(job)
    d = doc.denominators
    assert doc.kind == "benchflow.job" and doc.schema_version == 1
    # scored: pass, fail, timeout-scored, retried (best attempt); unscored: idle; assessment error: verr
    assert (d["attempted"], d["scored"], d["passed"], d["unscored"], d["assessment_errors"]) == (6, 4, 2, 1, 1)
    assert (d["execution_errors"], d["timed_out"], d["interrupted"]) == (2, 2, 1)
    assert (d["clean_scored"], d["clean_passed"]) == (3, 1)
    assert d["pass_rate_scored"] == pytest.approx(2 / 4)
    assert d["pass_rate_attempted"] == pytest.approx(2 / 6)
    assert doc.controls_excluded == 1 and doc.denominators_with_controls["passed"] == 3
    trials = by_task(doc)
    assert trials["idle"].outcome == "errored" and trials["idle"].error_category == "idle_timeout"
    assert trials["verr"].outcome == "verifier_errored"
    assert trials["verr"].verifier_error_category == "verifier_failure"
    assert trials["timeout-scored"].outcome == "passed" and trials["timeout-scored"].execution == "timed_out"
    assert trials["running"].finished is False and trials["running"].execution == "unfinished"
    assert trials["oracle-ctl"].control == "oracle"
    assert doc.error_categories == {"idle_timeout": 1, "timeout": 1}
    assert doc.verifier_error_categories == {"verifier_failure": 1}
    assert any("running__00000006" in note for note in doc.notes)
    assert doc.settings["agent"] == "claude-agent-acp" and doc.settings["sandbox"] == "docker"
    assert doc.solve_rates["controls_excluded"] == 1
    assert doc.timing_totals["total"] == pytest.approx(6 * 26.4) and doc.timing_totals["verifier"] == pytest.approx(38.4)
    assert doc.total_tokens == 4 * 1200 and doc.cost_usd == pytest.approx(0.04)  # the four scored, counted trials


def test_best_attempt_is_the_one_resume_keeps(job):
    best = by_task(bf.load_job(job))["retried"]
    assert best.name == "retried__00000009" and best.n_attempts == 2
    all_doc = bf.load_job(job, attempts="all")
    assert len([t for t in all_doc.trials if t.task_name == "retried"]) == 2
    assert all_doc.denominators["attempted"] == 7


def test_include_controls_and_groups(job):
    doc = bf.load_job(job, include_controls=True, by="agent")
    assert doc.denominators["passed"] == 3 and doc.controls_excluded == 0
    assert {g["group"]["agent"] for g in doc.groups} == {"claude-agent-acp", "oracle"}
    with pytest.raises(ConfigError):
        bf.load_job(job, by="colour")
    with pytest.raises(ConfigError):
        bf.load_job(job, attempts="worst")


def test_only_controls_are_counted(tmp_path):
    job = write_job(tmp_path, "oracle-only", [TrialSpec("a", 1.0, agent="oracle"), TrialSpec("b", 0.0, agent="oracle")])
    doc = bf.load_job(job)
    assert doc.denominators["attempted"] == 2 and doc.controls_excluded == 0


def test_json_roundtrip_is_strict(job):
    trial = next(p for p in JobPaths(job).trials() if p.name.startswith("pass"))
    result = json.loads(trial.result.read_text())
    result["rewards"] = {"reward": float("nan"), "other": float("inf")}
    trial.result.write_text(json.dumps(result))
    doc = bf.load_job(job)
    text = doc.model_dump_json()
    assert "NaN" not in text and "Infinity" not in text
    assert by_task(doc)["pass"].reward is None


def test_0_7_job_without_optional_files(tmp_path):
    """A 0.7 trial: result.json only, categories not stored, top-level agent; still readable."""
    job = tmp_path / "2026-04-22__10-00-00"
    trial = job / "regex-log__bab1cbf6"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps({
        "task_name": "regex-log", "rewards": None, "agent": "gemini", "model": "gemini-2.5-flash",
        "error": "Agent idle for 600s", "verifier_error": None}))
    broken = job / "broken__00000000"
    broken.mkdir()
    (broken / "result.json").write_text("{not json")
    (broken / "config.json").write_text(json.dumps({"task_path": "tasks/broken", "agent": "gemini"}))
    doc = bf.load_job(job)
    trials = by_task(doc)
    assert trials["regex-log"].error_category == "idle_timeout" and trials["regex-log"].duration_sec is None
    assert trials["broken"].finished is False
    assert any("broken__00000000/result.json: not valid JSON" in note for note in doc.notes)
    assert any("no evaluation.json" in note for note in doc.notes)


def test_not_a_job_is_a_one_line_user_error(tmp_path):
    with pytest.raises(JobFolderError, match="not a job folder"):
        bf.load_job(tmp_path)
    with pytest.raises(JobFolderError, match="no such file"):
        bf.load_job(tmp_path / "missing")
    with pytest.raises(JobFolderError, match="glob matches nothing"):
        bf.load_job(tmp_path / "nothing-*")


def test_find_jobs_skips_the_summary_copy_of_a_jobs_folder(tmp_path):
    write_job(tmp_path / "claude" / "trial-01", "job1", [TrialSpec("a", 1.0)])
    write_job(tmp_path / "claude" / "trial-02", "job2", [TrialSpec("a", 0.0)])
    (tmp_path / "summary.json").write_text("{}")
    assert [p.name for p in find_jobs(tmp_path)] == ["job1", "job2"]


def test_glob_and_results_jsonl(tmp_path):
    write_job(tmp_path, "j1", [TrialSpec("a", 1.0)])
    write_job(tmp_path, "j2", [TrialSpec("b", 0.0)])
    doc = bf.load_job(str(tmp_path / "j*"))
    assert doc.source == "glob" and {t.job for t in doc.trials} == {"j1", "j2"}
    rows = tmp_path / "results.jsonl"
    rows.write_text(json.dumps({"example_id": 1, "reward": 1.0, "info": {"task_name": "x"}}) + "\n"
                    + json.dumps({"example_id": 2, "reward": None, "error": "boom", "info": {"task_name": "y"}})
                    + "\n")
    doc = bf.load_job(rows)
    assert doc.source == "results.jsonl" and doc.denominators["passed"] == 1 and doc.denominators["attempted"] == 2


def test_running_job_is_detected(job):
    lock = JobPaths(job).lock
    lock.touch()
    with open(lock, "rb") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        assert bf.load_job(job).running is True
    assert bf.load_job(job).running is False


def test_load_trial_document(tmp_path):
    trial = write_trial(tmp_path / "job", TrialSpec(
        "t", 0.0, prompts=["Fix the bug.", "Now test it."],
        verifier_files={"test-stdout.txt": "x" * 70_000 + "FAILED test_a", "reward.txt": "0"},
        files={"regrade.json": json.dumps({"reward": 1.0, "reason": "fixed test"})}))
    doc = bf.load_trial(trial)
    assert doc.kind == "benchflow.trial" and doc.summary.reward == 0.0
    assert doc.instruction == "Fix the bug." and doc.prompts[1] == "Now test it."
    assert doc.verifier_files["reward.txt"] == "0"
    assert doc.verifier_files["test-stdout.txt"].endswith("FAILED test_a")
    assert "left out" in doc.verifier_files["test-stdout.txt"][:60]
    assert doc.regrade == {"reward": 1.0, "reason": "fixed test"}
    assert "result.json" in doc.files and doc.trajectories is None
    assert bf.load_trial(trial, verifier=False).verifier_files == {}
    with pytest.raises(JobFolderError):
        bf.load_trial(tmp_path)


def test_regrade_summary_is_read(job):
    (job / "regrade-summary.json").write_text(json.dumps({"regraded": 3, "changed": 1}))
    assert bf.load_job(job).regrade_summary == {"regraded": 3, "changed": 1}
    (job / "regrade-summary.json").write_text("{oops")
    doc = bf.load_job(job)
    assert doc.regrade_summary is None and any("regrade-summary.json" in n for n in doc.notes)


def test_each_seed_is_its_own_sample(tmp_path):
    job = write_job(tmp_path, "seeds", [
        TrialSpec("t", 1.0, result={"seed": 1}, config={"seed": 1}),
        TrialSpec("t", 0.0, result={"seed": 2}, config={"seed": 2}),
        TrialSpec("t", None, error="Connection reset", result={"seed": 2}, finished_at="2026-04-22 09:00:00")])
    doc = bf.load_job(job)
    assert sorted((t.seed, t.reward) for t in doc.trials) == [(1, 1.0), (2, 0.0)]
    assert doc.solve_rates["trials"] == 2 and doc.solve_rates["ks"] == [1, 2]
    assert doc.solve_rates["pass_at_k"]["2"] == 1.0
