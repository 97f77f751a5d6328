"""bench embodied report's numbers over seeded embodied jobs: rewards by seed, mean, std, pass@k, reset
reproducibility, in both seed namings (bench run --seeds and BenchFlow 0.7's seeded variants)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.embodied_jobs import Episode, write_embodied_trial
from fixtures.jobgen import TrialSpec, write_trial

from benchflow.embodied.report import format_report, seed_report
from benchflow.errors import JobFolderError

EARLY, LATE = "2026-04-22 10:03:00.000000", "2026-04-22 11:03:00.000000"


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    job = tmp_path_factory.mktemp("jobs") / "seeded"
    for seed, success in enumerate([True, False, False, True]):  # reach: bench run --seeds 0-3
        write_embodied_trial(job, "reach", Episode(seed, success))
    # seed 1 ran twice: an errored attempt first (its simulator reset to the same state), then the counted one
    write_embodied_trial(job, "reach", Episode(1, False), error="sandbox died", finished_at=EARLY)
    # push: BenchFlow 0.7's seeded variants, a partial reward, and seed 2's retry started from another state
    write_embodied_trial(job, "push", Episode(0, False), naming="variant")
    write_embodied_trial(job, "push", Episode(1, False, outcome="budget_exhausted", mode="hil-mock"),
                         naming="variant", reward=0.5)
    write_embodied_trial(job, "push", Episode(2, True), naming="variant", finished_at=EARLY)
    write_embodied_trial(job, "push", Episode(2, True, variant=1), naming="variant", finished_at=LATE)
    return job


def test_per_task_rewards_by_seed_mean_std_and_pass_at_k(job):
    report = seed_report(job)
    reach, push = report["tasks"]["reach"], report["tasks"]["push"]
    assert reach["rewards_by_seed"] == {"0": [1.0], "1": [0.0], "2": [0.0], "3": [1.0]}
    assert (reach["n"], reach["passes"], reach["errored"]) == (4, 2, 0)
    assert reach["mean"] == 0.5 and reach["std"] == pytest.approx(0.577350, abs=1e-6)  # sample std of 1,0,0,1
    assert reach["pass_at_k"] == {"1": 0.5, "2": 0.833333, "3": 1.0, "4": 1.0}  # 1 - C(2,k)/C(4,k)
    assert push["rewards_by_seed"] == {"0": [0.0], "1": [0.5], "2": [1.0]}  # seed 2: the later attempt counts
    assert push["mean"] == 0.5 and push["std"] == 0.5
    assert push["pass_at_k"] == {"1": 0.333333, "2": 0.666667, "3": 1.0}
    assert push["mode"] == ["hil-mock", "sim"]


def test_reset_reproducibility_uses_every_attempt_of_a_seed(job):
    tasks = seed_report(job)["tasks"]
    assert tasks["reach"]["reset_reproducible"] is True and tasks["reach"]["irreproducible_seeds"] == []
    assert tasks["push"]["reset_reproducible"] is False and tasks["push"]["irreproducible_seeds"] == ["2"]
    assert tasks["reach"]["distinct_initial_states"] == 4 and tasks["push"]["distinct_initial_states"] == 4


def test_summary_over_tasks(job):
    summary = seed_report(job)["summary"]
    assert (summary["tasks"], summary["trials"]) == (2, 7)
    assert summary["mean_reward"] == 0.5
    assert summary["pass_at_k"] == pytest.approx({"1": 0.416667, "2": 0.75, "3": 1.0, "4": 1.0}, abs=1e-6)
    assert summary["pass_rate"] == pytest.approx(3 / 7, abs=1e-6)
    low, high = summary["pass_rate_ci95"]
    assert 0 < low < 3 / 7 < high < 1
    assert summary["reset_reproducible"] is False
    assert summary["by_mode"]["hil-mock"]["trials"] == 1 and summary["by_mode"]["sim"]["trials"] == 6


def test_the_table_has_one_greppable_line_per_task(job):
    lines = format_report(seed_report(job)).splitlines()
    reach = next(line for line in lines if line.startswith("reach "))
    assert reach.split() == ["reach", "4", "2", "0.500", "0.577", "0.500", "0.833", "1.000", "1.000", "same"]
    push = next(line for line in lines if line.startswith("push "))
    assert push.split()[-1] == "DIFFER" and "seed(s) 2 started from different states" in "\n".join(lines)


def test_repeat_jobs_read_through_a_glob_are_pooled_per_seed(tmp_path):
    for repeat, variant in ((1, 0), (2, 1)):
        job = tmp_path / f"trial-0{repeat}" / "job"
        write_embodied_trial(job, "lift", Episode(0, True))
        write_embodied_trial(job, "lift", Episode(1, repeat == 2, variant=variant))
    lift = seed_report(Path(str(tmp_path / "trial-*" / "job")))["tasks"]["lift"]
    assert lift["rewards_by_seed"] == {"0": [1.0, 1.0], "1": [0.0, 1.0]} and lift["n"] == 4
    assert lift["reset_reproducible"] is False and lift["irreproducible_seeds"] == ["1"]


def test_unscored_and_plain_trials(tmp_path):
    job = tmp_path / "plain"
    write_trial(job, TrialSpec("grep", reward=1.0))
    write_trial(job, TrialSpec("grep-2", reward=None, error="Agent idle for 600s"))
    tasks = seed_report(job)["tasks"]
    assert tasks["grep"]["rewards_by_seed"] == {"unseeded": [1.0]} and "reset_reproducible" not in tasks["grep"]
    assert tasks["grep-2"]["n"] == 0 and tasks["grep-2"]["errored"] == 1 and tasks["grep-2"]["mean"] is None


def test_a_folder_without_trials_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "evaluation.json").write_text("{}")
    with pytest.raises(JobFolderError, match="no finished trials"):
        seed_report(tmp_path / "empty")
