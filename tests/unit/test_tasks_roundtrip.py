"""The structural round trip of a converted task: to the other layout and back with bench import /
bench export, compared with the task as it is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchflow.errors import UserError
from benchflow.tasks.roundtrip import roundtrip_task
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

TB2 = Path(__file__).resolve().parents[1] / "fixtures" / "compat" / "tb2-cwd-program"


def test_a_harbor_split_task_comes_back_unchanged(tmp_path):
    task = shutil.copytree(TB2, tmp_path / "tb2")
    (task / "task.toml").write_text((task / "task.toml").read_text() + "\n[upstream]\nid = 'x-17'\n")  # unknown key
    report = roundtrip_task(task)
    assert (report.layout, report.status, report.mismatches) == ("task-toml", "lossless", [])
    assert list(tmp_path.iterdir()) == [task]  # the trip happens in a scratch folder


def test_a_task_md_task_comes_back_unchanged(tmp_path):
    task = make_task(tmp_path, "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    report = roundtrip_task(task)
    assert (report.layout, report.status) == ("task-md", "lossless")


def test_what_the_split_layout_cannot_carry_is_drift(tmp_path):
    task = make_task(tmp_path, "persona", test=PASS_IF_HELLO)
    (task / "task.md").write_text((task / "task.md").read_text() + "\n## user-persona\n\nAn impatient user.\n")
    report = roundtrip_task(task)
    assert report.status == "drift"
    assert [m.path for m in report.mismatches] == ["## user-persona"]
    assert report.to_json()["mismatches"][0]["reason"].startswith("the simulated user's persona")


def test_a_task_that_does_not_load_is_drift(tmp_path):
    task = shutil.copytree(TB2, tmp_path / "tb2")
    (task / "task.toml").write_text("version = \n")
    report = roundtrip_task(task)
    assert report.status == "drift" and "does not load" in report.mismatches[0].reason


def test_a_missing_folder_is_bad_input(tmp_path):
    with pytest.raises(UserError, match="not a folder"):
        roundtrip_task(tmp_path / "nope")
