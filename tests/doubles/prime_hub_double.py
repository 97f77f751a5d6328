"""TEST DOUBLE: the parts of Prime Intellect's Environments Hub that ``bench`` (and ``pip``) talk to, on loopback.

    GET /api/v1/environmentshub/{owner}/{name}/@{version|latest}   {"data": {...}} as the prime CLI reads it:
                                                                   simple_index_url, wheel_url, visibility,
                                                                   version, metadata; 404 {"detail": ...}
    GET /{owner}/simple/                                           PEP 503 index of the owner's packages
    GET /{owner}/simple/{package}/                                 links to its wheels (#sha256=...)
    GET /{owner}/{name}/@{version}/{wheel}                         the wheel

Environments are folders in the layout ``prime env init`` makes (``pyproject.toml``, the module, README.md);
the double packs each into a real wheel (METADATA with the pyproject's requirements and the README as its
description, WHEEL, RECORD with hashes), as ``prime env push`` would have uploaded it. Every request is kept in
:attr:`requests` (method, path, Authorization header) so a test can check what was sent.
"""

from __future__ import annotations

import base64
import hashlib
import io
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from tests.doubles.scripted_common import ScriptedServer


def build_wheel(folder: Path) -> tuple[str, bytes]:
    """(file name, bytes) of a pure-Python wheel of the environment in ``folder``."""
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    dist = name.replace("-", "_").lower()
    info = f"{dist}-{version}.dist-info"
    readme = (folder / "README.md").read_text() if (folder / "README.md").is_file() else ""
    metadata = "".join([
        "Metadata-Version: 2.1\n", f"Name: {name}\n", f"Version: {version}\n",
        f"Summary: {project.get('description', '')}\n",
        *(f"Requires-Python: {project['requires-python']}\n" for _ in [0] if project.get("requires-python")),
        *(f"Requires-Dist: {dep}\n" for dep in project.get("dependencies", [])),
        "Description-Content-Type: text/markdown\n", "\n", readme])
    files = {path.name: path.read_bytes() for path in sorted(folder.glob("*.py"))}
    files[f"{info}/METADATA"] = metadata.encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: prime-hub-double\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{info}/RECORD"] = ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(zipfile.ZipInfo(path, date_time=(2025, 1, 1, 0, 0, 0)), data)
    return f"{dist}-{version}-py3-none-any.whl", buffer.getvalue()


class PrimeHubDouble(ScriptedServer):
    """Serves the environments added with :meth:`add` (owner, folder) until stopped."""

    def __init__(self) -> None:
        self.envs: dict[tuple[str, str], dict[str, tuple[str, bytes, str]]] = {}
        self.requests: list[dict[str, Any]] = []
        super().__init__()

    def add(self, owner: str, folder: Path) -> None:
        project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
        filename, data = build_wheel(folder)
        self.envs.setdefault((owner, project["name"]), {})[project["version"]] = (
            filename, data, project.get("description", ""))

    def routes(self) -> list:
        return [Route("/api/v1/environmentshub/{owner}/{name}/@{version}", self._details),
                Route("/{owner}/simple/", self._index),
                Route("/{owner}/simple/{package}/", self._links),
                Route("/{owner}/{name}/@{version}/{filename}", self._wheel)]

    def _seen(self, request: Request) -> None:
        self.requests.append({"method": request.method, "path": request.url.path,
                              "authorization": request.headers.get("authorization")})

    def _version(self, owner: str, name: str, version: str) -> tuple[str, tuple[str, bytes, str]] | None:
        versions = self.envs.get((owner, name)) or {}
        if version == "latest" and versions:
            version = max(versions, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))
        return (version, versions[version]) if version in versions else None

    async def _details(self, request: Request) -> Response:
        self._seen(request)
        owner, name = request.path_params["owner"], request.path_params["name"]
        found = self._version(owner, name, request.path_params["version"])
        if found is None:
            return JSONResponse({"detail": "Environment not found"}, status_code=404)
        version, (filename, _data, description) = found
        return JSONResponse({"data": {
            "id": f"env_{owner}_{name}", "name": name, "owner": {"name": owner}, "version": version,
            "visibility": "PUBLIC", "simple_index_url": f"{self.url}/{owner}/simple/",
            "wheel_url": f"{self.url}/{owner}/{name}/@{version}/{filename}",
            "metadata": {"description": description}}})

    async def _index(self, request: Request) -> Response:
        self._seen(request)
        owner = request.path_params["owner"]
        names = sorted({name.replace("-", "_").lower() for (o, name) in self.envs if o == owner})
        links = "".join(f'<a href="{n}/">{n}</a>\n' for n in names)
        return HTMLResponse(f"<!DOCTYPE html><html><body>\n{links}</body></html>")

    async def _links(self, request: Request) -> Response:
        self._seen(request)
        owner, package = request.path_params["owner"], request.path_params["package"].replace("-", "_").lower()
        links = []
        for (o, name), versions in sorted(self.envs.items()):
            if o != owner or name.replace("-", "_").lower() != package:
                continue
            for version, (filename, data, _) in sorted(versions.items()):
                digest = hashlib.sha256(data).hexdigest()
                links.append(f'<a href="{self.url}/{owner}/{name}/@{version}/{filename}#sha256={digest}">{filename}</a>')
        if not links:
            return HTMLResponse("not found", status_code=404)
        return HTMLResponse("<!DOCTYPE html><html><body>\n" + "<br/>\n".join(links) + "\n</body></html>")

    async def _wheel(self, request: Request) -> Response:
        self._seen(request)
        found = self._version(request.path_params["owner"], request.path_params["name"],
                              request.path_params["version"])
        if found is None or found[1][0] != request.path_params["filename"]:
            return Response(status_code=404)
        return Response(found[1][1], media_type="application/octet-stream")
