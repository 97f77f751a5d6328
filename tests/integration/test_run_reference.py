"""A task set's run-reference.toml: a strict one refuses a run that differs from it unless
--accept-deviations says why; the deviations and the reason are kept in run-card.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    (tmp_path / "tasks" / "run-reference.toml").write_text(
        'strict = true\nagent = "oracle"\ntimeout_multiplier = 1.0\n[retry]\nattempts = 2\n')
    return tmp_path / "tasks"


def test_a_strict_reference_refuses_a_run_that_differs(tasks: Path) -> None:
    same = run_bench("run", str(tasks), "--dry-run")
    other = run_bench("run", str(tasks), "--dry-run", "--timeout-multiplier", "2", "--retry-attempts", "0")
    assert same.returncode == 0, same.stderr
    assert other.returncode == 1
    assert "timeout_multiplier: reference 1.0, this run 2.0" in other.stderr
    assert "retry.attempts: reference 2, this run 0" in other.stderr and "--accept-deviations" in other.stderr


def test_a_lax_reference_only_warns(tasks: Path) -> None:
    reference = tasks / "run-reference.toml"
    reference.write_text(reference.read_text().replace("strict = true", "strict = false"))
    done = run_bench("run", str(tasks / "hello"), "--dry-run", "--timeout-multiplier", "2")
    assert done.returncode == 0 and "warning: this run differs from" in done.stderr


@pytest.mark.parametrize("text, needle", [
    ('agnet = "oracle"\n', "unknown key 'agnet'"),
    ('jobs_dir = "x"\n', "jobs_dir says where a run reads or writes"),
    ('timeout_multiplier = "fast"\n', "timeout_multiplier"),
    ("strict = 1\n", "strict: give true or false"),
])
def test_a_bad_reference_is_one_line_naming_the_file(tasks: Path, text: str, needle: str) -> None:
    (tasks / "run-reference.toml").write_text(text)
    done = run_bench("run", str(tasks), "--dry-run")
    assert done.returncode == 2 and needle in done.stderr and "run-reference.toml" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.docker
def test_accepted_deviations_run_and_are_kept_in_the_run_card(tasks: Path, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tasks), "--jobs-dir", str(jobs), "--timeout-multiplier", "2",
                     "--accept-deviations", "slow CI machine")
    assert done.returncode == 0, done.stderr
    [card] = jobs.rglob("run-card.json")
    doc = json.loads(card.read_text())
    assert doc["verdict"] == "accept" and doc["accepted_deviations"] == "slow CI machine"
    assert doc["deviations"] == ["timeout_multiplier: reference 1.0, this run 2.0"]
    assert doc["reference"] == str(tasks.resolve() / "run-reference.toml")
