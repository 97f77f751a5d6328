"""bench bundle: one redacted zip; a fake key in a trajectory must not survive."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from fixtures.jobgen import TrialSpec, write_job

from benchflow.errors import JobFolderError
from benchflow.results.bundle import bundle

FAKE_KEY = "sk-ant-api03-" + "A1b2C3d4E5" * 4


def _tar(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def job(tmp_path: Path) -> Path:
    spec = TrialSpec(
        "leaky", 1.0, suffix="0000beef",
        acp_events=[{"type": "user_message", "text": f"use key {FAKE_KEY} please"},
                    {"type": "tool_call", "title": f"export ANTHROPIC_API_KEY={FAKE_KEY}", "status": "completed"}],
        llm_exchanges=[{"request": {"headers": {"x-api-key": "plain-looking-value-123"}, "body": {}}}],
        verifier_files={"test-stdout.txt": f"Authorization: Bearer {FAKE_KEY[::-1]}abcdef\n1 passed"},
        files={"evidence/workspace.tar": _tar({"app/.env": f"KEY={FAKE_KEY}\n", "app/main.py": "print(1)\n"}),
               "artifacts/plot.bin": b"\x00\x01binary"})
    job = write_job(tmp_path, "job", [spec], summary={"agent": "claude-agent-acp"})
    (job / ".lock").write_text("")
    return job


def _zip_bytes(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_fake_key_does_not_reach_the_zip(job, tmp_path):
    out = tmp_path / "share" / "evidence.zip"
    report = bundle(job, out)
    assert out.is_file() and report.masked_total >= 4
    members = _zip_bytes(out)
    raw = out.read_bytes()
    for name, data in members.items():
        assert FAKE_KEY.encode() not in data, name
        if name.endswith(".tar"):
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                for member in tar.getmembers():
                    assert FAKE_KEY.encode() not in tar.extractfile(member).read()
    assert FAKE_KEY.encode() not in raw
    assert b"plain-looking-value-123" not in members["job/leaky__0000beef/trajectory/llm_trajectory.jsonl"]
    assert "job/.lock" not in members


def test_manifest_lists_hashes_and_what_was_masked(job, tmp_path):
    out = tmp_path / "b.zip"
    bundle(job, out)
    members = _zip_bytes(out)
    manifest = json.loads(members["job/bundle.json"])
    assert manifest["kind"] == "benchflow.bundle" and manifest["workspace"] is True
    files = {f["path"]: f for f in manifest["files"]}
    for rel, entry in files.items():
        assert hashlib.sha256(members[f"job/{rel}"]).hexdigest() == entry["sha256"]
    assert files["leaky__0000beef/trajectory/acp_trajectory.jsonl"]["masked"] >= 2
    assert files["leaky__0000beef/artifacts/plot.bin"]["redacted"] is False
    assert "leaky__0000beef/evidence/workspace.tar" in files


def test_no_workspace_leaves_evidence_out(job, tmp_path):
    report = bundle(job, tmp_path / "b.zip", workspace=False)
    assert not any(f.path.startswith("leaky__0000beef/evidence/") for f in report.files)
    assert {"path": "leaky__0000beef/evidence/", "reason": "saved workspace left out (--no-workspace)"} in report.left_out


def test_one_trial_and_default_path(job):
    trial = job / "leaky__0000beef"
    report = bundle(trial)
    assert report.out == str(job / "leaky__0000beef.bundle.zip")
    assert any(f.path == "result.json" for f in report.files)


def test_bad_paths(tmp_path, job):
    with pytest.raises(JobFolderError):
        bundle(tmp_path / "missing")
    with pytest.raises(JobFolderError):
        bundle(job, job / "inside.zip")


def test_private_keys_url_credentials_and_jwts_are_masked(tmp_path):
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV"
    job = write_job(tmp_path, "job", [TrialSpec("t", 1.0, files={
        "agent/claude_agent_acp.txt": f"{pem}\ngit clone https://bob:hunter2hunter@git.example/x\n{jwt}\n"})])
    out = tmp_path / "b.zip"
    report = bundle(job, out)
    text = b"".join(_zip_bytes(out).values())
    for secret in (b"b3BlbnNzaC1rZXktdjEAAAAA", b"hunter2hunter", jwt.encode()):
        assert secret not in text
    assert next(f for f in report.files if f.path.endswith("claude_agent_acp.txt")).masked == 3


def test_review_revisions_and_integrity_verdicts_travel_in_the_bundle(tmp_path):
    from tests.fixtures import reviewed_job

    job = reviewed_job.write(tmp_path / "job")
    report = bundle(job.root, tmp_path / "b.zip")
    names = {f.path for f in report.files}
    for trial in job.trials():
        for path in [*trial.root.glob("scoring/*.json"), trial.claim_verdict]:
            if path.is_file():
                assert f"{trial.name}/{path.relative_to(trial.root).as_posix()}" in names
    with zipfile.ZipFile(tmp_path / "b.zip") as zipped:
        assert any(n.endswith("integrity/claim_verdict.json") for n in zipped.namelist())
        assert any("/scoring/" in n for n in zipped.namelist())
