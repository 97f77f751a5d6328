"""Two wire formats of the AgentCore double: AWS event-stream frames and a Docker Registry HTTP API v2.

``frame`` encodes one message of ``application/vnd.amazon.eventstream`` as
the spec lays it out (botocore has a decoder only): a prelude of total length,
headers length and the prelude's CRC32, the headers (name length, name, type 7
= string, value length, value), the payload, and the CRC32 of everything before.

``Registry`` is the part of the Registry v2 API ``docker push`` and
``docker pull`` use against ECR: ``/v2/`` ping, blob HEAD/GET, chunked blob
uploads (POST, PATCH, PUT with ``digest``), manifests PUT/GET/HEAD. Blobs are
kept by digest in memory and checked against it.
"""

from __future__ import annotations

import binascii
import hashlib
import secrets
import struct

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def _header(name: str, value: str) -> bytes:
    key, data = name.encode(), value.encode()
    return struct.pack("B", len(key)) + key + struct.pack("!BH", 7, len(data)) + data


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message."""
    encoded = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    prelude += struct.pack("!I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + encoded + payload
    return body + struct.pack("!I", binascii.crc32(body) & 0xFFFFFFFF)


def event(event_type: str, payload: bytes) -> bytes:
    return frame({":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
                 payload)


class Registry:
    """See the module docstring; ``routes`` are mounted by the AgentCore double."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[tuple[str, str], tuple[bytes, str]] = {}
        self.uploads: dict[str, bytearray] = {}
        self.routes = [Route("/v2/", self.ping, methods=["GET"]),
                       Route("/v2/{name:path}/blobs/uploads/", self.begin, methods=["POST"]),
                       Route("/v2/{name:path}/blobs/uploads/{upload}", self.upload,
                             methods=["PATCH", "PUT", "GET"]),
                       Route("/v2/{name:path}/blobs/{digest}", self.blob, methods=["GET", "HEAD"]),
                       Route("/v2/{name:path}/manifests/{ref}", self.manifest, methods=["GET", "HEAD", "PUT"])]

    async def ping(self, request: Request) -> Response:
        return Response(b"{}", media_type="application/json",
                        headers={"Docker-Distribution-API-Version": "registry/2.0"})

    async def begin(self, request: Request) -> Response:
        name = request.path_params["name"]
        mounted = request.query_params.get("mount")
        if mounted and mounted in self.blobs:
            return Response(status_code=201, headers={"Location": f"/v2/{name}/blobs/{mounted}",
                                                      "Docker-Content-Digest": mounted})
        upload = secrets.token_hex(16)
        self.uploads[upload] = bytearray()
        return Response(status_code=202, headers={"Location": f"/v2/{name}/blobs/uploads/{upload}",
                                                  "Range": "0-0", "Docker-Upload-UUID": upload})

    async def upload(self, request: Request) -> Response:
        name, upload = request.path_params["name"], request.path_params["upload"]
        data = self.uploads.get(upload)
        if data is None:
            return Response(b'{"errors": [{"code": "BLOB_UPLOAD_UNKNOWN"}]}', status_code=404)
        data.extend(await request.body())
        if request.method != "PUT":
            return Response(status_code=202 if request.method == "PATCH" else 204, headers={
                "Location": f"/v2/{name}/blobs/uploads/{upload}", "Range": f"0-{max(0, len(data) - 1)}",
                "Docker-Upload-UUID": upload})
        digest = request.query_params.get("digest", "")
        if digest != "sha256:" + hashlib.sha256(data).hexdigest():
            return Response(b'{"errors": [{"code": "DIGEST_INVALID"}]}', status_code=400)
        self.blobs[digest] = bytes(self.uploads.pop(upload))
        return Response(status_code=201, headers={"Location": f"/v2/{name}/blobs/{digest}",
                                                  "Docker-Content-Digest": digest})

    async def blob(self, request: Request) -> Response:
        digest = request.path_params["digest"]
        data = self.blobs.get(digest)
        if data is None:
            return Response(b'{"errors": [{"code": "BLOB_UNKNOWN"}]}', status_code=404)
        headers = {"Docker-Content-Digest": digest, "Content-Length": str(len(data))}
        return Response(b"" if request.method == "HEAD" else data, headers=headers,
                        media_type="application/octet-stream")

    async def manifest(self, request: Request) -> Response:
        name, ref = request.path_params["name"], request.path_params["ref"]
        if request.method == "PUT":
            data = await request.body()
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            kind = request.headers.get("content-type", "application/vnd.docker.distribution.manifest.v2+json")
            self.manifests[(name, ref)] = self.manifests[(name, digest)] = (data, kind)
            return Response(status_code=201, headers={"Location": f"/v2/{name}/manifests/{digest}",
                                                      "Docker-Content-Digest": digest})
        found = self.manifests.get((name, ref))
        if found is None:
            return Response(b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}', status_code=404)
        data, kind = found
        headers = {"Docker-Content-Digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                   "Content-Length": str(len(data))}
        return Response(b"" if request.method == "HEAD" else data, headers=headers, media_type=kind)
