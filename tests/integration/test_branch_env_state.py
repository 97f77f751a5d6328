"""``bench branch --snapshot-layers environment|both`` on Docker, with a task that declares a SQLite
state file: each child starts from the database as it was at the fork (with a sha256 manifest), and
``environment`` leaves the rest of the sandbox as the previous child left it; a task that declares
no state, or an ``environment`` branch that would need a sandbox snapshot, is refused up front."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS

pytestmark = pytest.mark.docker

TASK = FIXTURE_TASKS / "branch-sqlite"
CHILDREN = ["--child", "label=one,prompt=add done", "--child", "label=two,prompt=add done"]


def _branch(bench, jobs: Path, layers: str, *extra: str):
    return bench("branch", "--tasks-dir", str(TASK), "--agent", "oracle", "--sandbox", "docker", "--jobs-dir",
                 str(jobs), "--parent", "discard", "--snapshot-layers", layers, *CHILDREN, *extra)


def _child_output(trial: Path, node: str) -> list[str]:
    return (trial / "branches/fork-0/children" / node / "verifier/test-stdout.txt").read_text().splitlines()


@pytest.mark.parametrize("layers, notes_of_two", [
    ("environment", "notes add done add done"),  # the database is restored, /app/notes is not
    ("both", "notes add done"),                  # the sandbox snapshot restores the rest as well
])
def test_each_child_starts_from_the_declared_database_of_the_fork(bench, tmp_path: Path, layers: str,
                                                                   notes_of_two: str) -> None:
    done = _branch(bench, tmp_path, layers)
    assert done.returncode == 0, done.stderr + done.stdout
    [trial] = [p.parent for p in tmp_path.rglob("tree.json")]
    # without the restore the second child would find the first child's row as well (reward 0)
    assert _child_output(trial, "one") == ["rows done", "notes add done"]
    assert _child_output(trial, "two") == ["rows done", notes_of_two]
    for node in ("one", "two"):
        assert json.loads((trial / f"branches/fork-0/children/{node}/observation.json").read_text())["reward"] == 1.0
    state = trial / "branches/fork-0/state"
    manifest = json.loads((state / "manifest.json").read_text())
    [entry] = manifest["files"]
    assert (manifest["state_kind"], entry["path"]) == ("sqlite", "/app/data/app.db")
    assert hashlib.sha256((state / entry["stored"]).read_bytes()).hexdigest() == entry["sha256"]
    tree = json.loads((trial / "tree.json").read_text())
    assert tree["snapshot_layers"] == layers
    assert (tree["forks"][0]["snapshot"] is None) == (layers == "environment")


@pytest.mark.parametrize("task, extra, needle", [
    (FIXTURE_TASKS / "branch-prompts", (), "declares no environment state"),
    (TASK, ("--isolate-children",), "one after another in the parent's sandbox"),
], ids=["undeclared", "isolated"])
def test_what_environment_layers_cannot_do_is_refused_before_anything_starts(bench, tmp_path: Path, task: Path,
                                                                              extra: tuple, needle: str) -> None:
    done = bench("branch", "--tasks-dir", str(task), "--agent", "oracle", "--sandbox", "docker", "--jobs-dir",
                 str(tmp_path), "--snapshot-layers", "environment", *CHILDREN, *extra)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "--snapshot-layers" in lines[0], done.stderr
    assert not list(tmp_path.rglob("tree.json"))
