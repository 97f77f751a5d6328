"""``bench run --checkpoints --retry-from-checkpoint`` on Docker: a trial that fails is retried once from
its last checkpoint, in its own sandbox session, and the retry's reward is reported beside the trial's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS

pytestmark = pytest.mark.docker

TASK = FIXTURE_TASKS / "branch-prompts"


def _job_images(job: Path) -> list[dict]:
    import docker

    client = docker.from_env()
    try:
        return client.api.images(filters={"label": [f"benchflow.job={job.resolve()}", "benchflow.kind=snapshot"]})
    finally:
        client.close()


def _remove(images: list[dict]) -> None:
    import docker

    client = docker.from_env()
    try:
        for image in images:
            client.api.remove_image(image["Id"], force=True)
    finally:
        client.close()


def test_a_failed_trial_passes_when_retried_from_its_checkpoint_with_another_prompt(bench, tmp_path: Path) -> None:
    # prompt 1 writes "don" (checkpoint), prompt 2 overwrites it with "nope" (reward 0); the retry starts
    # from the checkpoint and appends "e": "done" (reward 1) only if it really started from prompt 1's state
    done = bench("run", str(TASK), "-s", "docker", "--jobs-dir", str(tmp_path), "--prompt", "write don",
                 "--prompt", "write nope", "--checkpoints", "prompt:1", "--retry-from-checkpoint", "on-failure",
                 "--retry-prompt", "append e")
    assert done.returncode == 0, done.stderr + done.stdout
    [result_path] = list(tmp_path.rglob("result.json"))
    trial, job = result_path.parent, result_path.parent.parent
    try:
        result = json.loads(result_path.read_text())
        assert result["rewards"]["reward"] == 0.0  # the trial's own reward is kept
        retry = result["retry"]
        assert (retry["trigger"], retry["checkpoint"], retry["prompts"], retry["prompt_source"]) == (
            "failure", "prompt:1", ["append e"], "retry-prompt")
        assert (retry["status"], retry["reward"]) == ("passed", 1.0)
        child = trial / retry["path"]
        assert (child / "verifier/test-stdout.txt").read_text().split() == ["write", "don", "append", "e"]
        assert (trial / "verifier/test-stdout.txt").read_text().split() == ["write", "don", "write", "nope"]
        assert json.loads((child / "observation.json").read_text())["reward"] == 1.0
        summary = json.loads((job / "summary.json").read_text())
        assert summary["passed"] == 0 and summary["checkpoint_retries"] == {
            "retried": 1, "passed": 1, "improved": 1, "mean_reward": 1.0, "trials": {"branch-prompts": 1.0}}
        tree = json.loads((trial / "tree.json").read_text())
        [checkpoint] = tree["checkpoints"]
        assert checkpoint["id"] == "prompt:1" and checkpoint["kept"]
        # the checkpoint is kept for a later bench branch --from-checkpoint; nothing else is left
        assert [tag for image in _job_images(job) for tag in image["RepoTags"]] == [checkpoint["snapshot"]]
        shown = bench("eval", "branches", str(trial), "--json")
        assert shown.returncode == 0, shown.stderr
        [view] = json.loads(shown.stdout)
        assert [(c["node"], c["reward"]) for f in view["forks"] for c in f["children"]] == [("retry", 1.0)]
    finally:
        _remove(_job_images(job))


def test_a_passing_trial_is_not_retried_and_a_retry_without_checkpoints_is_refused(bench, tmp_path: Path) -> None:
    refused = bench("run", str(TASK), "-s", "docker", "--jobs-dir", str(tmp_path), "--retry-from-checkpoint",
                    "on-failure")
    assert refused.returncode == 2 and "needs --checkpoints" in refused.stderr
    assert refused.stderr.strip().count("\n") == 0 and not list(tmp_path.iterdir())
    done = bench("run", str(TASK), "-s", "docker", "--jobs-dir", str(tmp_path), "--prompt", "write done",
                 "--checkpoints", "every-prompt", "--retry-from-checkpoint", "both")
    assert done.returncode == 0, done.stderr + done.stdout
    [result_path] = list(tmp_path.rglob("result.json"))
    try:
        result = json.loads(result_path.read_text())
        assert result["rewards"]["reward"] == 1.0 and result["retry"] is None
        assert json.loads((result_path.parent.parent / "summary.json").read_text())["checkpoint_retries"] is None
    finally:
        _remove(_job_images(result_path.parent.parent))
