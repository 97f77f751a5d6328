"""``bench run`` / ``bench eval run`` trainer outputs as a user types them (local sandbox, oracle).

The selection's content over real model calls is tests/integration/test_canonical_from_real_runs.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.taskgen import make_task

ODD_SEEDS_PASS = 'if [ $((BENCHFLOW_SEED % 2)) = 1 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    make_task(tmp_path / "tasks", "odd", test=ODD_SEEDS_PASS)
    make_task(tmp_path / "tasks", "always", test="echo 1 > /logs/verifier/reward.txt")
    return tmp_path / "tasks"


@pytest.mark.parametrize("args, needle", [
    (["--canonical-jobs-dir", "c"], "--canonical-jobs-dir needs --canonicalize one-healthy-per-task"),
    (["--canonical-selection-out", "s.json"], "--canonical-selection-out needs --canonicalize one-healthy-per-task"),
    (["--canonicalize", "best"], "canonicalize: Input should be 'none' or 'one-healthy-per-task'"),
])
def test_bad_trainer_output_flags_are_one_line_and_exit_2(bench, tasks: Path, args: list[str], needle: str) -> None:
    done = bench("run", str(tasks), "--dry-run", *args)
    assert done.returncode == 2 and needle in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.local_sandbox
def test_a_folder_of_other_files_is_refused_before_anything_runs(bench, tasks: Path, tmp_path: Path) -> None:
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    done = bench("eval", "run", str(tasks), "-s", "local", "--jobs-dir", str(tmp_path / "jobs"),
                 "--canonicalize", "one-healthy-per-task", "--canonical-jobs-dir", str(other))
    assert done.returncode == 2 and "not an earlier canonical copy" in done.stderr
    assert not (tmp_path / "jobs").exists() and (other / "notes.txt").read_text() == "keep"


@pytest.mark.local_sandbox
def test_selection_defaults_into_the_job_and_convert_reads_it(bench, tasks: Path, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    done = bench("run", str(tasks), "-s", "local", "--jobs-dir", str(jobs), "--job-name", "j", "--seeds", "0,1",
                 "--canonicalize", "one-healthy-per-task", "--health-summary-out", str(tmp_path / "h.json"))
    assert done.returncode == 0, done.stderr
    selection_path = jobs / "j" / "canonical-selection.json"
    assert f"Canonical selection: {selection_path}" in done.stderr
    selection = json.loads(selection_path.read_text())
    picked = {r["task_id"]: r for r in selection["selected"]}
    assert set(picked) == {"odd", "always"} and picked["odd"]["reward"] == 1.0
    seed_of = {p.parent.name: json.loads(p.read_text())["seed"] for p in (jobs / "j").glob("*/result.json")}
    assert seed_of[Path(picked["odd"]["rollout_dir"]).name] == 1
    assert json.loads((tmp_path / "h.json").read_text())["total_rows"] == 4
    manifest = tmp_path / "m.json"
    converted = bench("train", "convert", str(jobs), "-o", str(tmp_path / "rows.jsonl"), "--manifest", str(manifest),
                      "--canonical-selection", str(selection_path))
    assert converted.returncode == 0, converted.stderr
    doc = json.loads(manifest.read_text())
    # The oracle makes no model calls: the two selected rollouts have no conversation, the others are not selected.
    assert (doc["skipped_not_selected"], doc["skipped_no_llm_trajectory"], doc["rows_written"]) == (2, 2, 0)


@pytest.mark.local_sandbox
def test_each_repeat_writes_its_own_outputs(bench, tasks: Path, tmp_path: Path) -> None:
    done = bench("run", str(tasks), "-s", "local", "--jobs-dir", str(tmp_path / "jobs"), "--trials", "2",
                 "--canonicalize", "one-healthy-per-task", "--canonical-selection-out", str(tmp_path / "out" / "s.json"),
                 "--canonical-jobs-dir", str(tmp_path / "canonical"))
    assert done.returncode == 0, done.stderr
    for n in ("01", "02"):
        selection = json.loads((tmp_path / "out" / "oracle" / f"trial-{n}" / "s.json").read_text())
        assert f"/trial-{n}/" in selection["job_dir"] and selection["selected_count"] == 2
        assert (tmp_path / "canonical" / "oracle" / f"trial-{n}" / "canonical-selection.json").is_file()
