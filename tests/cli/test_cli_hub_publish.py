"""``bench hub publish|push|serve`` and ``bench traj upload|status``: help and bad input, no hub needed."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize(("command", "expected"), [
    (["hub", "publish"], ["TASKS_DIR", "--name", "--hub", "--description", "--license", "--kind", "--source-repo",
                          "--source-commit", "--exporter", "Publish a folder of tasks as an immutable dataset"]),
    (["hub", "push"], ["JOB_DIR", "--hub", "--dataset", "--label", "Push a finished run"]),
    (["hub", "serve"], ["--host", "[default: 127.0.0.1]", "--port", "--db", "--blobs", "--create-token"]),
    (["traj", "upload"], ["--github-id", "--email", "--source-id", "--repo", "--no-repo", "--workspace",
                          "--workspace-dir", "--dry-run", "--preview-steps", "[default: 5]", "--wait", "--no-wait"]),
    (["traj", "status"], ["DIGEST", "Check whether an uploaded trajectory is verified in storage."]),
])
def test_help_lists_the_reference_flags(bench, command: list[str], expected: list[str]) -> None:
    result = bench(*command, "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    for item in expected:
        assert item in text, item


def _one_line_exit_2(result, needle: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_a_dataset_name_without_org_or_version_is_exit_2(bench, tmp_path: Path) -> None:
    result = bench("hub", "publish", str(tmp_path), "--name", "mini@1.0", "--hub", "http://127.0.0.1:9")
    _one_line_exit_2(result, "--name 'mini@1.0': give a dataset version as org/name@version")


def test_no_hub_address_is_exit_2(bench, tmp_path: Path) -> None:
    result = bench("hub", "push", str(tmp_path), env={"BENCHFLOW_HUB_URL": ""})
    _one_line_exit_2(result, "no hub given: pass --hub URL or set BENCHFLOW_HUB_URL")


def test_an_unreachable_hub_is_exit_2(bench, tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "task.md").write_text("---\n---\nhello\n")
    result = bench("hub", "publish", str(tmp_path), "--name", "acme/x@1", "--hub", "http://127.0.0.1:9")
    _one_line_exit_2(result, "cannot reach the hub at http://127.0.0.1:9")


def test_pushing_a_folder_that_is_not_a_job_is_exit_2(bench, tmp_path: Path) -> None:
    result = bench("hub", "push", str(tmp_path), "--hub", "http://127.0.0.1:9")
    _one_line_exit_2(result, "not a job folder")


def test_a_database_url_of_another_kind_is_exit_2(bench) -> None:
    _one_line_exit_2(bench("hub", "serve", "--db", "mysql://db/hub"), "give sqlite:///PATH or postgresql://")


def test_traj_upload_of_a_file_that_is_not_jsonl_is_exit_2(bench, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    _one_line_exit_2(bench("traj", "upload", str(tmp_path / "notes.txt")), "not a trajectory .jsonl file")
    _one_line_exit_2(bench("traj", "upload", str(tmp_path)), "holds no trajectory .jsonl file")


def test_traj_upload_asks_before_sending(bench, tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text('{"type": "agent_message", "text": "hi"}\n')
    result = bench("traj", "upload", str(tmp_path / "s.jsonl"), input="n\n",
                   env={"BENCHFLOW_HUB_URL": "http://127.0.0.1:9", "BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 1
    assert "Upload this redacted trajectory?" in result.stdout and "Not uploaded." in result.stderr


def test_traj_dry_run_skips_a_workspace_over_1_gib(bench, tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text('{"type": "agent_message", "text": "hi"}\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with (workspace / "big.bin").open("wb") as handle:  # sparse: no disk used
        handle.truncate((1 << 30) + 1)
    result = bench("traj", "upload", str(tmp_path / "s.jsonl"), "--dry-run", "--workspace-dir", str(workspace),
                   env={"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    assert "Workspace: not attached (ws is over 1 GiB; skipped)" in result.stdout


def test_traj_contributor_comes_from_git(bench, tmp_path: Path) -> None:
    import json
    import subprocess
    import zipfile

    session = tmp_path / "session"
    session.mkdir()
    for args in (["init", "-q"], ["remote", "add", "origin", "https://github.com/acme/sessions.git"],
                 ["config", "user.email", "dev@example.invalid"]):
        subprocess.run(["git", "-C", str(session), *args], check=True)
    (session / "s.jsonl").write_text('{"type": "agent_message", "text": "hi"}\n')
    env = {"BENCHFLOW_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    result = bench("traj", "upload", str(session / "s.jsonl"), "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "contributor acme/sessions" in result.stdout
    staged = next((tmp_path / "cache" / "traj" / "staged").glob("*.zip"))
    manifest = json.loads(zipfile.ZipFile(staged).read("manifest.json"))
    assert manifest["contributor"] == {"github_id": None, "email": "dev@example.invalid",
                                       "source_id": "acme/sessions", "repo": "acme/sessions"}
    no_repo = bench("traj", "upload", str(session / "s.jsonl"), "--dry-run", "--no-repo", "--source-id", "me",
                    env=env)
    assert "contributor me" in no_repo.stdout
