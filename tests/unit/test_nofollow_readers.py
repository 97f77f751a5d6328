"""Readers of job folders never follow a link a sandbox planted: rewards, trial documents, the viewer, regrade."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from fixtures.jobgen import TrialSpec, write_job
from starlette.testclient import TestClient

from benchflow.jobs.layout import TrialPaths
from benchflow.results.trial import load_trial
from benchflow.util import nofollow
from benchflow.verify.rewards import RewardError, parse_reward_files
from benchflow.viewer.app import create_app
from benchflow.viewer.sources import resolve_source

SECRET = "0.75 host-secret-value-4242"


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    path = tmp_path / "host" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def _in_thread(fn, timeout: float = 10.0):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) if it does not return."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "reader blocked"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_open_file_refuses_links_and_special_files(tmp_path, host_file):
    (tmp_path / "plain").write_text("ok")
    (tmp_path / "link").symlink_to(host_file)
    os.mkfifo(tmp_path / "fifo")
    assert nofollow.read_bytes(tmp_path / "plain") == b"ok"
    with pytest.raises(nofollow.UnsafeFile):
        nofollow.read_bytes(tmp_path / "link")
    with pytest.raises(nofollow.UnsafeFile):
        _in_thread(lambda: nofollow.read_bytes(tmp_path / "fifo"))
    with pytest.raises(nofollow.UnsafeFile):
        nofollow.read_bytes(tmp_path / "plain", limit=1)
    with pytest.raises(FileNotFoundError):
        nofollow.read_bytes(tmp_path / "missing")


def test_open_file_under_a_root_refuses_a_linked_folder_on_the_way(tmp_path, host_file):
    root = tmp_path / "trial"
    (root / "verifier").mkdir(parents=True)
    (root / "verifier" / "out.txt").write_text("ok")
    (root / "agent").symlink_to(host_file.parent)
    assert nofollow.read_bytes(root / "verifier" / "out.txt", root=root) == b"ok"
    with pytest.raises(nofollow.UnsafeFile):
        nofollow.read_bytes(root / "agent" / "secret.txt", root=root)
    with pytest.raises(nofollow.UnsafeFile):
        nofollow.read_bytes(host_file, root=root)


@pytest.mark.parametrize("name", ["reward.txt", "reward.json"])
def test_a_reward_file_that_links_to_a_host_file_is_refused_unread(tmp_path, host_file, name):
    folder = tmp_path / "verifier"
    folder.mkdir()
    (folder / name).symlink_to(host_file)
    with pytest.raises(RewardError) as caught:
        parse_reward_files(folder)
    assert name in str(caught.value) and "host-secret" not in str(caught.value)


def test_a_reward_fifo_is_refused_without_blocking(tmp_path):
    folder = tmp_path / "verifier"
    folder.mkdir()
    os.mkfifo(folder / "reward.txt")
    with pytest.raises(RewardError):
        _in_thread(lambda: parse_reward_files(folder))


def test_plain_reward_files_still_score(tmp_path):
    folder = tmp_path / "verifier"
    folder.mkdir()
    (folder / "reward.txt").write_text("1\n")
    assert parse_reward_files(folder) == {"reward": 1.0}


def _trial_with_planted_links(tmp_path: Path, host_file: Path) -> Path:
    job = write_job(tmp_path / "jobs", "job", [TrialSpec("leaky", 1.0, suffix="0000beef",
                                                         verifier_files={"test-stdout.txt": "1 passed\n"})])
    trial = TrialPaths(job / "leaky__0000beef")
    (trial.verifier_dir / "stolen.txt").symlink_to(host_file)
    (trial.verifier_dir / "reward-details.json").symlink_to(host_file)
    trial.agent_dir.mkdir(parents=True, exist_ok=True)
    (trial.agent_dir / "x").symlink_to(host_file)
    (trial.verifier_dir / "logs").symlink_to(host_file.parent)
    return trial.root


def test_trial_document_leaves_planted_links_unread(tmp_path, host_file):
    root = _trial_with_planted_links(tmp_path, host_file)
    doc = load_trial(root)
    assert "test-stdout.txt" in doc.verifier_files
    assert "stolen.txt" not in doc.verifier_files and not any(k.startswith("logs/") for k in doc.verifier_files)
    assert doc.reward_details is None
    assert "agent/x" not in doc.files and "verifier/stolen.txt" not in doc.files
    assert "host-secret" not in doc.model_dump_json()


def test_viewer_trial_endpoint_serves_no_host_file(tmp_path, host_file):
    root = _trial_with_planted_links(tmp_path, host_file)
    api = TestClient(create_app(resolve_source(str(root.parent))), base_url="http://127.0.0.1")
    response = api.get("/api/trial", params={"id": root.name})
    assert response.status_code == 200 and "test-stdout.txt" in response.json()["verifier_files"]
    assert "host-secret" not in response.text


def test_regrade_treats_a_planted_link_in_the_frozen_workspace_as_changed(tmp_path, host_file):
    import json

    from benchflow.results.regrade_trial import Candidate, evidence_problem
    from benchflow.util.files import sha256_digest

    trial = TrialPaths(tmp_path / "t__1")
    trial.evidence_workspace.mkdir(parents=True)
    (trial.evidence_workspace / "main.py").symlink_to(host_file)
    trial.evidence_manifest.write_text(json.dumps({"files": [
        {"path": "main.py", "sha256": sha256_digest(host_file).hex()}]}))
    problem = evidence_problem(Candidate(paths=trial, task_name="t"))
    assert problem is not None and problem[0] == "evidence_changed"
