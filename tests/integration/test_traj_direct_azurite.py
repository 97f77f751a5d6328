"""``bench traj upload --direct``: a redacted capture lands in an Azure Blob container (Azurite, a real emulator).

Azurite (npm ``azurite``, installed by scripts/setup.d/azurite.sh) is started
here on a free loopback port with a temporary storage folder; the test waits
until it answers. What arrived is read back from the container and from
Azurite's own storage folder, so "the key was never sent" is checked on the
server's side.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.waiting import wait_until

ACCOUNT = "devstoreaccount1"
# Azurite's published development-storage key (the same in every install; not a secret).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
PLANTED = "sk-ant-api03-" + "K" * 40


@dataclass
class Azurite:
    port: int
    location: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};BlobEndpoint={self.endpoint};"

    def stored_bytes(self) -> bytes:
        return b"".join(p.read_bytes() for p in self.location.rglob("*") if p.is_file())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    binary = shutil.which("azurite-blob")
    if binary is None:
        reason = "azurite-blob is not installed; run scripts/setup.d/azurite.sh"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)")
        pytest.skip(reason)
    location = tmp_path_factory.mktemp("azurite")
    port = _free_port()
    proc = subprocess.Popen([binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(location),
                             "--silent", "--disableTelemetry", "--skipApiVersionCheck", "--loose"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: _answers(port) or proc.poll() is not None, timeout=60, what="Azurite to listen")
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "azurite exited"
        yield Azurite(port, location)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def container(azurite: Azurite, request: pytest.FixtureRequest) -> str:
    from azure.storage.blob import BlobServiceClient

    name = "traj-" + request.node.name.lower().replace("_", "-")[:40].strip("-")
    BlobServiceClient.from_connection_string(azurite.connection_string).create_container(name)
    return name


def staged_capture(tmp_path: Path):
    from benchflow.traj.identity import Contributor
    from benchflow.traj.sources import find_sources
    from benchflow.traj.stage import stage

    trial = tmp_path / "session"
    trial.mkdir()
    (trial / "acp_trajectory.jsonl").write_text(
        '{"type": "user_message", "text": "deploy with ANTHROPIC_API_KEY=' + PLANTED + '"}\n'
        '{"type": "agent_message", "text": "done"}\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(f"key: {PLANTED}\nsome work\n")
    dest = tmp_path / "staged"
    dest.mkdir()
    who = Contributor(github_id="octo", email=None, source_id=None, repo=None)
    return stage(find_sources(trial), who, dest, preview_steps=2, workspace_dir=workspace)


def blobs_of(azurite: Azurite, name: str) -> dict[str, bytes]:
    from azure.storage.blob import BlobServiceClient

    client = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client(name)
    return {b.name: client.download_blob(b.name).readall() for b in client.list_blobs()}


def test_capture_arrives_redacted_with_a_connection_string(azurite: Azurite, container: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from benchflow.traj.direct import direct_upload

    capture = staged_capture(tmp_path)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    result = direct_upload(capture, f"{azurite.endpoint}/{container}")
    hex_digest = capture.digest.split(":", 1)[1]
    blobs = blobs_of(azurite, container)
    assert sorted(blobs) == sorted(result.blobs) == [f"captures/{hex_digest}/{n}" for n in
                                                      ("manifest.json", "trajectory/acp_trajectory.jsonl",
                                                       "workspace.zip")]
    trajectory = blobs[f"captures/{hex_digest}/trajectory/acp_trajectory.jsonl"]
    assert b"deploy with" in trajectory and PLANTED.encode() not in trajectory
    with zipfile.ZipFile(io.BytesIO(blobs[f"captures/{hex_digest}/workspace.zip"])) as ws:
        notes = ws.read(next(n for n in ws.namelist() if n.endswith("notes.txt")))
    assert b"some work" in notes and PLANTED.encode() not in notes
    assert PLANTED.encode() not in azurite.stored_bytes()


def test_sas_in_the_url_is_enough_and_never_shown(azurite: Azurite, container: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    from benchflow.traj.direct import DirectUploadError, direct_upload

    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_KEY"):
        monkeypatch.delenv(name, raising=False)
    capture = staged_capture(tmp_path)
    sas = generate_container_sas(ACCOUNT, container, account_key=KEY,
                                 permission=ContainerSasPermissions(write=True, create=True),
                                 expiry=datetime.now(UTC) + timedelta(hours=1))
    result = direct_upload(capture, f"{azurite.endpoint}/{container}?{sas}")
    assert len(blobs_of(azurite, container)) == 3 and "?" not in result.container
    forged = sas.replace("sig=", "sig=AAAA")
    with pytest.raises(DirectUploadError) as refused:
        direct_upload(capture, f"{azurite.endpoint}/{container}?{forged}")
    message = str(refused.value)
    assert "check the SAS" in message
    assert "sig=" not in message and forged not in message


def test_missing_container_and_bad_url_are_clear(azurite: Azurite, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from benchflow.errors import UserError
    from benchflow.traj.direct import DirectUploadError, direct_upload

    capture = staged_capture(tmp_path)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    with pytest.raises(DirectUploadError, match="ContainerNotFound; create the container first"):
        direct_upload(capture, f"{azurite.endpoint}/no-such-container")
    for bad in ("ftp://host/c", "http://example.com/acct/c", "https://acct.blob.core.windows.net"):
        with pytest.raises(UserError, match="--container-url"):
            direct_upload(capture, bad)


def test_bench_traj_upload_direct_end_to_end(bench, azurite: Azurite, container: str, tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text('{"type": "user_message", "text": "token ' + PLANTED + '"}\n')
    env = {"AZURE_STORAGE_CONNECTION_STRING": azurite.connection_string, "BENCHFLOW_CACHE": str(tmp_path / "c"),
           "HOME": str(tmp_path)}
    no_url = bench("traj", "upload", str(session), "--direct", "--yes", env=env)
    assert no_url.returncode == 2 and "--container-url" in no_url.stderr
    done = bench("traj", "upload", str(session), "--direct", "--container-url", f"{azurite.endpoint}/{container}",
                 "--yes", "--no-repo", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Masked for you: 1" in done.stdout and f"{azurite.endpoint}/{container}/captures/" in done.stdout
    blobs = blobs_of(azurite, container)
    [trajectory] = [name for name in blobs if name.endswith("/trajectory/s.jsonl")]
    assert b"token" in blobs[trajectory] and PLANTED.encode() not in azurite.stored_bytes()
    assert KEY not in done.stdout + done.stderr
