"""``bench traj upload|status`` against a real ``bench hub serve`` (SQLite and PostgreSQL).

The planted secrets are checked where it matters: in the bytes the hub stored.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fixtures.hub_server import Hub, bench_cmd, postgres_database

from tests.waiting import wait_until

KEY = "sk-ant-api03-PLANTEDvalue0123456789abcdefXYZ"
HEADER = "planted-header-secret-7f3a9c"
FIELD = "planted-field-value-e41b0d"
WORKSPACE_SECRET = "ghp_PLANTEDworkspace0123456789abcdefABCD"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    base = tmp_path_factory.mktemp(f"traj-hub-{request.param}")
    drop = None
    db = f"sqlite:///{base / 'hub.sqlite3'}"
    if request.param == "postgresql":
        db, drop = postgres_database()
    served = Hub(db, base / "blobs")
    yield served
    served.stop()
    if drop:
        drop()


def _trajectory(folder: Path) -> Path:
    lines = [
        {"type": "user_message", "text": f"use this key: {KEY}"},
        {"type": "tool_call", "request": {"headers": {"x-api-key": HEADER}}, "api_key": FIELD, "tool": "bash"},
        {"type": "agent_message", "text": "all done"},
    ]
    path = folder / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _env(hub: Hub, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**hub.env(), "BENCHFLOW_CACHE": str(tmp_path / "cache"), **extra}


def _stored_bytes(hub: Hub) -> list[bytes]:
    """Every stored blob, and every member of every zip inside it (recursively), decompressed."""
    out: list[bytes] = []

    def walk(data: bytes) -> None:
        out.append(data)
        if data[:4] == b"PK\x03\x04":
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for name in archive.namelist():
                    walk(archive.read(name))

    for blob in (hub.blobs / "sha256").rglob("*"):
        if blob.is_file():
            walk(blob.read_bytes())
    return out


def test_dry_run_shows_the_redacted_preview_and_sends_nothing(hub: Hub, tmp_path: Path) -> None:
    before = _stored_bytes(hub)
    result = bench_cmd("traj", "upload", str(_trajectory(tmp_path)), "--dry-run", "--preview-steps", "2",
                       env=_env(hub, tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Masked for you: 3 value(s)" in out
    assert "Preview (first 2 redacted step(s)):" in out
    assert '"text": "use this key: ***"' in out and '"x-api-key": "***"' in out and '"api_key": "***"' in out
    assert "all done" not in out  # only two steps previewed
    assert "Dry run: nothing was sent" in out
    for secret in (KEY, HEADER, FIELD):
        assert secret not in out
    assert _stored_bytes(hub) == before


def test_an_upload_never_sends_a_planted_secret(hub: Hub, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(f"GITHUB_TOKEN={WORKSPACE_SECRET}\nkeep this line\n")
    result = bench_cmd("traj", "upload", str(_trajectory(tmp_path)), "--yes", "--workspace-dir", str(workspace),
                       "--github-id", "octo", "--email", "octo@example.invalid", "--no-repo",
                       env=_env(hub, tmp_path))
    assert result.returncode == 0, result.stderr
    digest = next(line.split()[1] for line in result.stdout.splitlines() if line.startswith("Uploaded "))
    assert f"{digest}: verified" in result.stdout
    stored = _stored_bytes(hub)
    assert any(b"keep this line" in data for data in stored)  # the workspace file did arrive
    assert any(b'"source_id": "octo"' in data for data in stored)
    for secret in (KEY, HEADER, FIELD, WORKSPACE_SECRET):
        assert not any(secret.encode() in data for data in stored), secret
    status = bench_cmd("traj", "status", env=_env(hub, tmp_path))  # the last upload's digest
    assert status.returncode == 0 and f"{digest}: verified" in status.stdout


def _raw_capture(text: str) -> bytes:
    body = text.encode()
    manifest = {"kind": "benchflow.trajectory-capture", "schema_version": 1,
                "files": [{"path": "trajectory/raw.jsonl", "sha256": hashlib.sha256(body).hexdigest()}]}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("trajectory/raw.jsonl", body)
    return buffer.getvalue()


def test_the_hub_rejects_a_capture_that_still_holds_a_secret(hub: Hub, tmp_path: Path) -> None:
    data = _raw_capture(json.dumps({"type": "user_message", "text": f"key {KEY}"}) + "\n")
    answer = httpx.post(f"{hub.url}/api/trajectories", content=data,
                        headers={"authorization": f"Bearer {hub.token}"})
    assert answer.status_code == 202
    digest = answer.json()["digest"]
    state = wait_until(lambda: (s := httpx.get(f"{hub.url}/api/trajectories/{digest}").json())["status"] != "received"
                       and s, timeout=30, what="the hub's verdict")
    assert state["status"] == "rejected" and "still holds a secret-looking value" in state["reason"]
    assert not any(KEY.encode() in blob for blob in _stored_bytes(hub))
    status = bench_cmd("traj", "status", digest, env=_env(hub, tmp_path))
    assert status.returncode == 1 and "rejected" in status.stderr


def test_status_of_an_unknown_digest_is_one_line_exit_2(hub: Hub, tmp_path: Path) -> None:
    result = bench_cmd("traj", "status", "sha256:" + "0" * 64, env=_env(hub, tmp_path))
    assert result.returncode == 2 and "no trajectory with this digest" in result.stderr
    bad = bench_cmd("traj", "status", "abc", env=_env(hub, tmp_path))
    assert bad.returncode == 2 and "sha256: and 64 hex digits" in bad.stderr


def test_an_upload_without_a_token_is_refused(hub: Hub, tmp_path: Path) -> None:
    result = bench_cmd("traj", "upload", str(_trajectory(tmp_path)), "--yes",
                       env=_env(hub, tmp_path, BENCHFLOW_HUB_TOKEN=""))
    assert result.returncode == 2 and "BENCHFLOW_HUB_TOKEN is not set" in result.stderr
