"""What a reviewer gets to read: a copy of the rollout, and the task only from a trusted root with the recorded digest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchflow.errors import ConfigError
from benchflow.jobs.layout import TrialPaths
from benchflow.review.evidence import collect_evidence
from benchflow.review.prompts import load_template
from benchflow.tasks.digest import task_digest
from tests.fixtures.jobgen import TrialSpec, write_trial
from tests.taskgen import PASS_IF_HELLO, make_task


def _trial(tmp_path: Path, decoy: Path, digest: str) -> TrialPaths:
    root = write_trial(tmp_path / "job", TrialSpec(
        task="hello", config={"task_path": str(decoy)}, result={"task_digest": digest},
        files={"evidence/workspace/answer.txt": "42", "scoring/1.json": "{}", "agent/log.txt": "hi"}))
    os.symlink("/etc/hostname", root / "agent" / "leak.txt")
    return TrialPaths(root)


def test_the_task_comes_only_from_the_trusted_root_with_the_recorded_digest(tmp_path: Path) -> None:
    decoy = tmp_path / "decoy"
    make_task(decoy.parent, decoy.name, test="echo DECOY-SECRET")
    task = make_task(tmp_path / "trusted", "hello", test=PASS_IF_HELLO)
    trial = _trial(tmp_path, decoy, task_digest(task))

    evidence = collect_evidence(trial, tmp_path / "ev", task_dir=task, tasks_root_given=True,
                                recorded_digest=task_digest(task))
    assert evidence.task["included"] and (tmp_path / "ev" / "task" / "task.md").is_file()
    assert (tmp_path / "ev" / "workspace" / "answer.txt").read_text() == "42"
    assert (tmp_path / "ev" / "trial" / "result.json").is_file()
    assert not (tmp_path / "ev" / "trial" / "evidence").exists()  # the workspace goes to workspace/
    assert not (tmp_path / "ev" / "trial" / "scoring").exists()   # earlier revisions are not evidence
    assert not (tmp_path / "ev" / "trial" / "agent" / "leak.txt").exists()
    assert "trial/agent/leak.txt" in evidence.skipped
    every = "".join(p.read_text(errors="replace") for p in (tmp_path / "ev").rglob("*") if p.is_file())
    assert "DECOY-SECRET" not in every  # the task path the rollout recorded is never read


def test_a_task_whose_digest_differs_from_the_rollout_is_not_admitted(tmp_path: Path) -> None:
    task = make_task(tmp_path / "trusted", "hello", test=PASS_IF_HELLO)
    trial = _trial(tmp_path, tmp_path / "nowhere", "sha256:" + "0" * 64)
    evidence = collect_evidence(trial, tmp_path / "ev", task_dir=task, tasks_root_given=True,
                                recorded_digest="sha256:" + "0" * 64)
    assert not evidence.task["included"] and "not admitted" in evidence.task["reason"]
    assert not (tmp_path / "ev" / "task").exists()
    without = collect_evidence(trial, tmp_path / "ev2", task_dir=None, tasks_root_given=False,
                               recorded_digest="sha256:" + "0" * 64)
    assert without.task == {"included": False, "reason": "no --tasks-root given"}


def test_a_custom_template_with_an_unknown_placeholder_is_refused(tmp_path: Path) -> None:
    template = tmp_path / "prompt.txt"
    template.write_text("Review $task_name with $rubric; cost $$5; answer at $answer_path\n")
    assert "$task_name" in load_template(template)
    template.write_text("Review $task and $rubric\n")
    with pytest.raises(ConfigError, match=r"unknown placeholder \$task;"):
        load_template(template)
