"""``bench hub serve --blobs az://CONTAINER``: the hub keeps its blobs in Azure Blob Storage (Azurite, a real
emulator), and publishing, the registry and archive downloads work as with a folder."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.fixtures.hub_server import Hub
from tests.integration.test_hub_service import _publish, _tasks_dir
from tests.integration.test_traj_direct_azurite import azurite  # noqa: F401 - the Azurite fixture


def test_publish_stores_archives_in_the_container_and_serves_them(azurite, tmp_path,  # noqa: F811
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from azure.storage.blob import BlobServiceClient

    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    hub = Hub(f"sqlite:///{tmp_path / 'hub.sqlite3'}", "az://hub-blobs")  # type: ignore[arg-type]
    try:
        done = _publish(hub, _tasks_dir(tmp_path))
        assert done.returncode == 0, done.stderr
        registry = httpx.get(f"{hub.url}/api/registry.json", timeout=30).json()
        tasks = {t["name"]: t for d in registry for v in d.get("versions", [d]) for t in v.get("tasks", [])}
        assert set(tasks) == {"reward-pass", "reward-fail"}
        container = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client(
            "hub-blobs")
        stored = {b.name for b in container.list_blobs()}
        for task in tasks.values():
            archive = httpx.get(task["archive_url"], timeout=30)
            assert archive.status_code == 200
            assert f"sha256/{hashlib.sha256(archive.content).hexdigest()}" in stored
        assert not any((tmp_path / name).exists() for name in ("blobs", "az:"))  # nothing kept on the host folder
    finally:
        hub.stop()


def test_a_bad_container_name_or_a_missing_connection_is_one_line(tmp_path, monkeypatch) -> None:
    from tests.fixtures.hub_server import bench_cmd

    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    db = f"sqlite:///{tmp_path / 'hub.sqlite3'}"
    for blobs, words in (("az://Bad_Name", "not an Azure container name"),
                         ("az://hub-blobs", "AZURE_STORAGE_CONNECTION_STRING")):
        done = bench_cmd("hub", "serve", "--db", db, "--blobs", blobs, "--create-token", "alice")
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
