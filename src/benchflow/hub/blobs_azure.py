"""The hub's blobs in an Azure Blob Storage container (``bench hub serve --blobs az://CONTAINER``).

For a shared deployment whose machines have no common disk. The connection
comes from the environment only — ``AZURE_STORAGE_CONNECTION_STRING`` — never
from a flag. Keys are the same content addresses as on the filesystem
(``sha256/<hex>`` blob names). Uploads are spooled and hashed on local disk first
(:func:`.blobs.receive`), then sent; a blob another check must read as a file
(an archive's digest, a capture's scan) is downloaded once into a local cache
beside the spool folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO

from benchflow.errors import UserError

from .blobs import check_key

SCHEME = "az://"
CONNECTION_ENV = "AZURE_STORAGE_CONNECTION_STRING"


class AzureBlobStore:
    def __init__(self, container: str, scratch: Path | None = None) -> None:
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob import BlobServiceClient

        connection = os.environ.get(CONNECTION_ENV)
        if not connection:
            raise UserError(f"--blobs {SCHEME}{container}: set {CONNECTION_ENV} in the environment (it is read "
                            "only from there)")
        self.container = container
        self.root = f"{SCHEME}{container}"
        self._client = BlobServiceClient.from_connection_string(connection).get_container_client(container)
        try:
            self._client.create_container()
        except ResourceExistsError:
            pass
        self._scratch = Path(scratch or tempfile.mkdtemp(prefix="benchflow-hub-blobs-"))
        (self._scratch / "incoming").mkdir(parents=True, exist_ok=True)
        (self._scratch / "cache").mkdir(exist_ok=True)

    @staticmethod
    def _name(key: str) -> str:
        return "sha256/" + check_key(key).split(":", 1)[1]

    def has(self, key: str) -> bool:
        return self._client.get_blob_client(self._name(key)).exists()

    def local_path(self, key: str) -> Path:
        cached = self._scratch / "cache" / check_key(key).split(":", 1)[1]
        if not cached.is_file():
            fd, part = tempfile.mkstemp(dir=self._scratch / "incoming", prefix="download-")
            with os.fdopen(fd, "wb") as out:
                self._client.download_blob(self._name(key)).readinto(out)
            os.replace(part, cached)
        return cached

    def open(self, key: str) -> IO[bytes]:
        return self.local_path(key).open("rb")

    def put_file(self, key: str, path: Path) -> None:
        with open(path, "rb") as data:
            self._client.upload_blob(self._name(key), data, overwrite=True)
        path.unlink(missing_ok=True)

    def delete(self, key: str) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            self._client.delete_blob(self._name(key))
        except ResourceNotFoundError:
            pass
        (self._scratch / "cache" / check_key(key).split(":", 1)[1]).unlink(missing_ok=True)

    def spool_dir(self) -> Path:
        return self._scratch / "incoming"
