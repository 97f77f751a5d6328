"""What Daytona builds a sandbox from: a Dockerfile plus its build context in Daytona's object storage.

Daytona builds a sandbox's image itself from ``build_info`` (the Dockerfile's
text and the hashes of context archives it downloads from its object storage,
each at ``<organization>/<hash>/context.tar``; the push credentials come from
``GET /object-storage/push-access``). The whole ``environment/`` folder is one
archive named by the sha256 of its contents, so an unchanged task reuses the
archive and Daytona's cached build, and a changed one rebuilds.

The archive is uploaded here with boto3's S3 client rather than the SDK's
obstore uploader: obstore trusts only its built-in roots and refuses plain
http, so it cannot reach an S3 endpoint behind a private CA or a test double,
while boto3 honours ``AWS_CA_BUNDLE``.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from ..base import SandboxSpec
from ..bundled_skills import in_folder
from ..dockerfile_heredoc import ContextFile


def write_context(spec: SandboxSpec, out: IO[bytes], added: Iterable[ContextFile] = ()) -> bool:
    """Write the build context to ``out`` as a reproducible tar (sorted, no times or owners): ``environment/``
    and the ``added`` files (a Dockerfile's heredoc ``COPY`` bodies); False (nothing written) when there is none."""
    if spec.image or spec.environment_dir is None:
        return False
    root = Path(spec.environment_dir)
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if not spec.bundled_skills and in_folder(rel.as_posix()):
                continue
            info = _reproducible(archive.gettarinfo(str(path), arcname=rel.as_posix()))
            if info.isreg():
                with path.open("rb") as handle:
                    archive.addfile(info, handle)
            else:
                archive.addfile(info)
        for extra in added:
            info = _reproducible(tarfile.TarInfo(extra.path))
            info.size, info.mode = len(extra.data), extra.mode
            archive.addfile(info, io.BytesIO(extra.data))
    return True


def _reproducible(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """``info`` owned by root with no names or time, so the same files make the same archive (and hash)."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def context_hash(archive: IO[bytes]) -> str:
    """The name of an archive in the object storage: a digest of its bytes (read from the start)."""
    archive.seek(0)
    digest = hashlib.sha256()
    while chunk := archive.read(1 << 20):
        digest.update(chunk)
    archive.seek(0)
    return digest.hexdigest()[:32]


def upload_context(object_storage_api, archive: IO[bytes]) -> str:
    """Put ``archive`` into Daytona's object storage (once: it is content-addressed); its hash."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    access = object_storage_api.get_push_access()
    digest = context_hash(archive)
    key = f"{access.organization_id}/{digest}/context.tar"
    s3 = boto3.client("s3", endpoint_url=access.storage_url, aws_access_key_id=access.access_key,
                      aws_secret_access_key=access.secret, aws_session_token=access.session_token,
                      region_name=access.region, config=Config(s3={"addressing_style": "path"}))
    try:
        s3.head_object(Bucket=access.bucket, Key=key)
        return digest
    except ClientError:
        pass
    s3.put_object(Bucket=access.bucket, Key=key, Body=archive)
    return digest
