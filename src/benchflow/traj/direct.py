"""``bench traj upload --direct --container-url URL``: a staged capture straight into an Azure Blob container.

The capture is the zip :mod:`.stage` wrote (everything in it already went
through the redactor); its members are uploaded as blobs under
``captures/<digest hex>/`` (``manifest.json``, ``trajectory/<name>``,
``workspace.zip``), the manifest last, so a reader that sees the manifest sees
a complete capture. Each blob carries the capture digest in its metadata.

Credentials are local and never leave this process except to the container:
a SAS in the URL's query, or from the environment — ``AZURE_STORAGE_SAS_TOKEN``,
``AZURE_STORAGE_CONNECTION_STRING`` (its account key or SAS), or
``AZURE_STORAGE_KEY`` (with the account named in the URL). URLs in messages
are shown without their query, so a SAS is never printed or logged.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from benchflow.errors import BenchError, UserError

PREFIX = "captures"


class DirectUploadError(BenchError):
    """The container refused or failed the upload (exit 1)."""

    category = "traj_upload_error"


@dataclass
class DirectResult:
    container: str
    """The container URL without its query (no SAS)."""
    prefix: str
    blobs: list[str] = field(default_factory=list)
    bytes: int = 0


def public_url(url: str) -> str:
    """``url`` without query or fragment: what may be printed."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _env_credential(url: str) -> Any:
    """The credential the environment gives for ``url``'s account, or None (a SAS in the URL, or anonymous)."""
    sas = os.environ.get("AZURE_STORAGE_SAS_TOKEN")
    if sas:
        from azure.core.credentials import AzureSasCredential

        return AzureSasCredential(sas.lstrip("?"))
    conn = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if conn:
        fields = dict(part.split("=", 1) for part in conn.split(";") if "=" in part)
        if fields.get("AccountName") and fields.get("AccountKey"):
            return {"account_name": fields["AccountName"], "account_key": fields["AccountKey"]}
        if fields.get("SharedAccessSignature"):
            from azure.core.credentials import AzureSasCredential

            return AzureSasCredential(fields["SharedAccessSignature"].lstrip("?"))
        raise UserError("AZURE_STORAGE_CONNECTION_STRING: has neither AccountName+AccountKey nor "
                        "SharedAccessSignature; give one of them")
    key = os.environ.get("AZURE_STORAGE_KEY")
    if key:
        account = os.environ.get("AZURE_STORAGE_ACCOUNT") or _account_of(url)
        return {"account_name": account, "account_key": key}
    return None


def _account_of(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host.endswith(".blob.core.windows.net"):
        return host.split(".", 1)[0]
    segments = [s for s in parts.path.split("/") if s]
    return segments[0] if len(segments) >= 2 else host  # emulator style: /<account>/<container>


def check_container_url(url: str | None) -> str:
    """Refuse a missing or malformed ``--container-url`` (exit 2); the URL itself is never echoed whole."""
    if not url:
        raise UserError("--direct needs --container-url https://<account>.blob.core.windows.net/<container>")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc or not parts.path.strip("/"):
        raise UserError(f"--container-url {public_url(url)}: give the container's URL, "
                        "https://<account>.blob.core.windows.net/<container> (a SAS may follow as ?sv=…)")
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise UserError(f"--container-url {public_url(url)}: use https (plain http only for a local emulator)")
    return url


def direct_upload(capture: Any, container_url: str) -> DirectResult:
    """Upload the staged ``capture`` (a :class:`.stage.Capture`, or anything with ``path`` and ``digest``).

    Raises:
        UserError: a bad URL or credential setting (exit 2).
        DirectUploadError: the container refused or failed (exit 1); the message has no secret.
    """
    from azure.core.exceptions import AzureError, HttpResponseError
    from azure.storage.blob import ContainerClient

    check_container_url(container_url)
    path = Path(capture.path)
    digest = str(capture.digest)
    prefix = f"{PREFIX}/{digest.split(':', 1)[-1]}"
    shown = public_url(container_url)
    result = DirectResult(container=shown, prefix=prefix)
    client = ContainerClient.from_container_url(container_url, credential=_env_credential(container_url))
    try:
        with client, zipfile.ZipFile(path) as archive:
            members = [m for m in archive.infolist() if not m.is_dir() and _safe(m.filename)]
            members.sort(key=lambda m: m.filename == "manifest.json")  # the manifest goes last
            for member in members:
                name = f"{prefix}/{member.filename}"
                with archive.open(member) as stream:
                    client.upload_blob(name, stream, length=member.file_size, overwrite=True,
                                       metadata={"benchflow_capture": digest.replace(":", "_")})
                result.blobs.append(name)
                result.bytes += member.file_size
    except HttpResponseError as exc:
        code = getattr(exc, "error_code", None) or exc.status_code
        code = getattr(code, "value", code)  # a StorageErrorCode enum: its wire name
        denied = "check the SAS or the AZURE_STORAGE_* credentials, and that they may write to this container"
        hint = {"ContainerNotFound": "create the container first", "AuthenticationFailed": denied,
                "AuthorizationFailure": denied, "AuthorizationPermissionMismatch": denied}.get(str(code), "")
        raise DirectUploadError(f"upload to {shown} failed: {code}{'; ' + hint if hint else ''}") from None
    except AzureError as exc:
        raise DirectUploadError(f"upload to {shown} failed: {type(exc).__name__} (is the account reachable?)") from None
    return result


def _safe(name: str) -> bool:
    pure = PurePosixPath(name)
    return not pure.is_absolute() and ".." not in pure.parts
