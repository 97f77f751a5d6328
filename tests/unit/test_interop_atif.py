"""bench traj export --format atif: what Harbor's own ATIF validator accepts, carrying what the trial did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.interop_job import FAKE_KEY, PLAIN_SECRET, USAGE, interop_job, require_tool_folder
from fixtures.jobgen import TrialSpec, write_job

from benchflow.errors import JobFolderError
from benchflow.interop.export import export


@pytest.fixture
def harbor(monkeypatch: pytest.MonkeyPatch):
    """Harbor 0.25's TrajectoryValidator, imported from the wheel scripts/setup.d/interop-formats.sh unpacks."""
    monkeypatch.syspath_prepend(str(require_tool_folder("harbor")))  # the folder holds only the harbor package
    from harbor.utils.trajectory_validator import TrajectoryValidator

    return TrajectoryValidator


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return interop_job(tmp_path)


def _valid(harbor, path: Path) -> dict:
    validator = harbor()
    assert validator.validate(path), validator.get_errors()
    return json.loads(path.read_text())


def test_each_trial_with_a_trajectory_is_a_valid_atif_file(job, harbor, tmp_path):
    report = export(job, tmp_path / "atif")
    assert sorted(Path(p).parent.name for p in report.written) == [
        "fix-calc__0000aaaa", "fix-calc__0000bbbb", "fix-calc__0000cccc"]
    assert {item["path"] for item in report.left_out} == {"broken-env__0000dddd", "slow-task__0000eeee"}
    for path in report.written:
        document = _valid(harbor, Path(path))
        assert document["schema_version"] == "ATIF-v1.8"


def test_messages_tool_calls_results_and_usage_are_carried(job, harbor, tmp_path):
    export(job, tmp_path / "atif")
    document = _valid(harbor, tmp_path / "atif" / "fix-calc__0000aaaa" / "trajectory.json")
    steps = document["steps"]
    assert [s["source"] for s in steps] == ["user", "agent", "agent", "agent"]
    first, second, last = steps[1], steps[2], steps[3]
    assert first["reasoning_content"] == "I should run the tests first."
    assert first["message"] == "Running the tests."
    assert first["tool_calls"][0]["arguments"]["command"] == "pytest -q"
    assert first["observation"]["results"][0]["source_call_id"] == "toolu_01"
    assert "1 failed" in first["observation"]["results"][0]["content"]
    assert second["message"] == "Fixing calc.py." and last == {"step_id": 4, "source": "agent",
                                                               "message": "Done: the test passes."}
    results = {r["source_call_id"]: r for r in second["observation"]["results"]}
    assert "+return a + b" in results["toolu_02"]["content"]
    assert results["toolu_03"]["extra"] == {"failed": True} and "No such file" in results["toolu_03"]["content"]
    metrics = document["final_metrics"]
    assert metrics["total_prompt_tokens"] == USAGE["n_input_tokens"] + USAGE["n_cache_read_tokens"] + \
        USAGE["n_cache_creation_tokens"]
    assert metrics["total_completion_tokens"] == USAGE["n_output_tokens"]
    assert metrics["total_cached_tokens"] == USAGE["n_cache_read_tokens"]
    assert metrics["total_cost_usd"] == USAGE["cost_usd"]
    assert document["agent"]["model_name"] == "claude-haiku-4-5"
    assert document["extra"]["benchflow"]["reward"] == 1.0


def test_a_trajectory_a_killed_writer_left_unmerged_exports_like_the_merged_one(job, harbor, tmp_path):
    export(job, tmp_path / "atif")
    merged = _valid(harbor, tmp_path / "atif" / "fix-calc__0000aaaa" / "trajectory.json")
    raw = _valid(harbor, tmp_path / "atif" / "fix-calc__0000bbbb" / "trajectory.json")
    assert raw["steps"] == merged["steps"]


def test_the_oracle_is_a_step_without_a_model_call(job, harbor, tmp_path):
    export(job, tmp_path / "atif")
    document = _valid(harbor, tmp_path / "atif" / "fix-calc__0000cccc" / "trajectory.json")
    (step,) = document["steps"]
    assert step["llm_call_count"] == 0 and step["tool_calls"][0]["arguments"] == {"command": "bash oracle/solve.sh"}
    assert step["observation"]["results"][0]["content"] == "patched calc.py\n"
    assert "model_name" not in document["agent"]


def test_secrets_do_not_reach_the_export(job, harbor, tmp_path):
    report = export(job, tmp_path / "atif")
    for path in report.written:
        text = Path(path).read_text()
        assert FAKE_KEY not in text and PLAIN_SECRET not in text, path


def test_a_trial_folder_exports_one_file_beside_it(job, harbor, bench):
    trial = job / "fix-calc__0000aaaa"
    done = bench("traj", "export", str(trial))
    assert done.returncode == 0, done.stderr
    _valid(harbor, job / "fix-calc__0000aaaa.trajectory.json")


@pytest.mark.parametrize(("args", "says"), [
    (["--format", "csv"], "--format csv"),
    (["--out", "{job}/fix-calc__0000aaaa/out.json"], "inside the folder it reads"),
])
def test_bad_input_is_one_line_and_exit_2(job, bench, args, says):
    done = bench("traj", "export", str(job / "fix-calc__0000aaaa"), *[a.format(job=job) for a in args])
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("trial", "says"), [
    ("slow-task__0000eeee", "has not finished"),
    ("broken-env__0000dddd", "no trajectory events"),
])
def test_a_trial_with_nothing_to_export_is_refused(job, trial, says, tmp_path):
    with pytest.raises(JobFolderError, match=says):
        export(job / trial, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_a_job_with_no_trajectory_to_export_is_refused(tmp_path):
    job = write_job(tmp_path, "job", [TrialSpec("broken-env", None, error="sandbox did not start")])
    with pytest.raises(JobFolderError, match="nothing to export"):
        export(job, tmp_path / "atif")
    assert not (tmp_path / "atif").exists()
