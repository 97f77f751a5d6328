"""Test double: the subset of the Hugging Face Hub HTTP API that ``huggingface_hub`` calls for BenchFlow.

It serves, on loopback, what ``snapshot_download`` / ``hf_hub_download``,
``HfApi.repo_info`` / ``list_repo_tree``, ``create_repo``, ``upload_folder`` /
``create_commit`` (regular, inline uploads; pull requests with
``create_pr=1``) ask for, with the Hub's paths, headers and JSON shapes:

    GET  /api/{models|datasets}/{org}/{name}[/revision/{rev}]   repo info (sha, siblings, private)
    GET  /api/{models|datasets}/{org}/{name}/tree/{rev}[/{path}] file listing (?recursive=true)
    POST /api/{models|datasets}/{org}/{name}/preupload/{rev}     every file "regular" (no LFS, no Xet)
    POST /api/{models|datasets}/{org}/{name}/commit/{rev}        NDJSON commit (header, file, deletedFile)
    POST /api/repos/create                                       409 when it exists
    GET  /api/agent-harnesses                                    an empty registry (the library asks once)
    HEAD|GET /[datasets/]{org}/{name}/resolve/{rev}/{path}        X-Repo-Commit, ETag, Content-Length

Repositories live in memory: each commit is a full ``{path: bytes}`` map. A
test seeds a dataset with :meth:`HfHubDouble.add_repo` and reads what arrived
with :meth:`HfHubDouble.files`. Writes need ``Authorization: Bearer
<token>`` with :attr:`token`; a private repository is unreadable without it
(401, as the Hub answers). Every request is kept in :attr:`requests` (method,
path, headers, body bytes) so a test can check what was sent — e.g. that a
planted secret never reached the server.

Run it alone: ``python tests/doubles/hf_hub_double.py --port 8990``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

TOKEN = "hf_doubletoken0123456789abcdef"
"""The write token the double accepts (tests export it as HF_TOKEN)."""


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool = False
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    """branch, tag or refs/pr/N -> commit sha."""
    messages: dict[str, str] = field(default_factory=dict)
    pull_requests: list[str] = field(default_factory=list)

    def commit(self, ref: str, files: dict[str, bytes], message: str) -> str:
        sha = hashlib.sha1(json.dumps([ref, message, len(self.commits), sorted(files)]).encode()).hexdigest()
        self.commits[sha] = files
        self.refs[ref] = sha
        self.messages[sha] = message
        return sha

    def resolve(self, rev: str) -> str | None:
        if rev in self.refs:
            return self.refs[rev]
        return rev if rev in self.commits else None


class HfHubDouble:
    """The fake Hub; use as a context manager or :meth:`start` / :meth:`stop`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, token: str = TOKEN) -> None:
        self.host, self.port, self.token = host, port, token
        self.repos: dict[tuple[str, str], Repo] = {}
        self.requests: list[dict[str, Any]] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(routes=[Route("/{anything:path}", self._dispatch,
                                           methods=["GET", "HEAD", "POST", "PUT", "DELETE"])])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # --- seeding and reading ----------------------------------------------------------
    def add_repo(self, repo_id: str, files: dict[str, bytes | str], *, repo_type: str = "dataset",
                 private: bool = False, ref: str = "main") -> str:
        """Create (or add a commit to) a repository; returns the new commit sha."""
        repo = self.repos.setdefault((repo_type, repo_id), Repo(repo_type, repo_id, private=private))
        data = {path: content.encode() if isinstance(content, str) else content for path, content in files.items()}
        return repo.commit(ref, data, "seed")

    def files(self, repo_id: str, *, repo_type: str = "dataset", ref: str = "main") -> dict[str, bytes]:
        repo = self.repos[(repo_type, repo_id)]
        return dict(repo.commits[repo.refs[ref]])

    def all_request_bytes(self) -> bytes:
        """Everything clients sent (paths, headers and bodies), for "never sent" assertions."""
        out = bytearray()
        for req in self.requests:
            out += req["path"].encode() + json.dumps(req["headers"]).encode() + req["body"]
        return bytes(out)

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> HfHubDouble:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, lifespan="off", log_level="warning", access_log=False, http="h11",
                                loop="asyncio")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve(sockets=[sock])), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("hf hub double did not start")
            time.sleep(0.002)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=5)

    def __enter__(self) -> HfHubDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- HTTP -----------------------------------------------------------------------
    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization", "") == f"Bearer {self.token}"

    async def _dispatch(self, request: Request) -> Response:
        body = await request.body()
        raw = request.scope.get("raw_path", b"").decode().split("?", 1)[0]
        parts = [unquote(p) for p in raw.strip("/").split("/")]
        self.requests.append({"method": request.method, "path": raw, "query": request.url.query,
                              "headers": dict(request.headers), "body": body})
        if request.headers.get("authorization") and not self._authorized(request):
            return _error(401, "Invalid credentials in Authorization header")
        if parts[:2] == ["api", "agent-harnesses"]:  # the library's best-effort agent-detection registry
            return JSONResponse({"standardEnvVars": [], "harnesses": {}})
        if parts[:3] == ["api", "repos", "create"] and request.method == "POST":
            return self._create(request, json.loads(body or b"{}"))
        if len(parts) >= 4 and parts[0] == "api" and parts[1] in ("models", "datasets"):
            return self._api(request, parts[1][:-1], f"{parts[2]}/{parts[3]}", parts[4:], body)
        repo_type, rest = ("dataset", parts[1:]) if parts[0] == "datasets" else ("model", parts)
        if len(rest) >= 5 and rest[2] == "resolve":
            return self._resolve(request, repo_type, f"{rest[0]}/{rest[1]}", rest[3], "/".join(rest[4:]))
        return _error(404, f"double: no route for {request.method} {raw}")

    def _repo(self, request: Request, repo_type: str, repo_id: str) -> Repo | Response:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None or (repo.private and not self._authorized(request)):
            return _error(401 if not self._authorized(request) else 404, "Repository Not Found",
                          code="RepoNotFound")
        return repo

    def _create(self, request: Request, payload: dict[str, Any]) -> Response:
        if not self._authorized(request):
            return _error(401, "You must be authenticated to create a repository")
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization')}/{payload['name']}"
        if (repo_type, repo_id) in self.repos:
            return _error(409, "You already created this repo", url=self._repo_url(repo_type, repo_id))
        repo = Repo(repo_type, repo_id, private=payload.get("visibility") == "private" or bool(payload.get("private")))
        repo.commit("main", {".gitattributes": b""}, "initial commit")
        self.repos[(repo_type, repo_id)] = repo
        return JSONResponse({"url": self._repo_url(repo_type, repo_id), "name": repo_id})

    def _repo_url(self, repo_type: str, repo_id: str) -> str:
        return f"{self.url}/{'datasets/' if repo_type == 'dataset' else ''}{repo_id}"

    def _api(self, request: Request, repo_type: str, repo_id: str, rest: list[str], body: bytes) -> Response:
        found = self._repo(request, repo_type, repo_id)
        if isinstance(found, Response):
            return found
        repo = found
        action = rest[0] if rest else "revision"
        rev, sub = _split_rev(repo, rest[1:]) if rest else ("main", "")
        sha = repo.resolve(rev)
        if sha is None:
            return _error(404, f"Invalid rev id: {rev}", code="RevisionNotFound")
        files = repo.commits[sha]
        if action == "revision" and request.method == "GET":
            return JSONResponse({"id": repo_id, "_id": repo_id, "sha": sha, "private": repo.private,
                                 "siblings": [{"rfilename": p} for p in sorted(files)],
                                 "lastModified": "2026-01-01T00:00:00.000Z", "tags": [], "downloads": 0,
                                 "likes": 0, "disabled": False, "gated": False})
        if action == "tree" and request.method == "GET":
            return JSONResponse(_tree(files, sub, request.query_params.get("recursive") in ("true", "1", "True")))
        if action == "preupload" and request.method == "POST":
            if not self._authorized(request):
                return _error(401, "write access needs a token")
            wanted = json.loads(body or b"{}").get("files", [])
            return JSONResponse({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                            "oid": None} for f in wanted], "commitOid": sha})
        if action == "commit" and request.method == "POST":
            if not self._authorized(request):
                return _error(401, "write access needs a token")
            return self._commit(request, repo, rev, dict(files), body)
        return _error(404, f"double: {action} not served")

    def _commit(self, request: Request, repo: Repo, rev: str, files: dict[str, bytes], body: bytes) -> Response:
        summary = ""
        for line in body.decode().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item["key"], item["value"]
            if key == "header":
                summary = value.get("summary", "")
            elif key == "file":
                content = value["content"]
                files[value["path"]] = base64.b64decode(content) if value.get("encoding") == "base64" else content.encode()
            elif key == "deletedFile":
                files.pop(value["path"], None)
            elif key == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                files = {p: c for p, c in files.items() if not p.startswith(prefix)}
            else:
                return _error(400, f"double: commit item {key} not supported (uploads must be regular)")
        pr_url = None
        if request.query_params.get("create_pr") in ("1", "true", "True"):
            number = len(repo.pull_requests) + 1
            ref = f"refs/pr/{number}"
            repo.pull_requests.append(ref)
            pr_url = f"{self._repo_url(repo.repo_type, repo.repo_id)}/discussions/{number}"
        else:
            ref = rev
        sha = repo.commit(ref, files, summary)
        return JSONResponse({"success": True, "commitOid": sha,
                             "commitUrl": f"{self._repo_url(repo.repo_type, repo.repo_id)}/commit/{sha}",
                             "pullRequestUrl": pr_url})

    def _resolve(self, request: Request, repo_type: str, repo_id: str, rev: str, path: str) -> Response:
        found = self._repo(request, repo_type, repo_id)
        if isinstance(found, Response):
            return found
        sha = found.resolve(rev)
        if sha is None:
            return _error(404, f"Invalid rev id: {rev}", code="RevisionNotFound")
        content = found.commits[sha].get(path)
        if content is None:
            return _error(404, "Entry not found", code="EntryNotFound")
        headers = {"X-Repo-Commit": sha, "ETag": f'"{_git_oid(content)}"', "Content-Length": str(len(content))}
        if request.method == "HEAD":
            return Response(b"", headers=headers)
        return Response(content, headers=headers, media_type="application/octet-stream")


def _split_rev(repo: Repo, rest: list[str]) -> tuple[str, str]:
    """Split ``rev[/sub/path]``; a revision may itself hold slashes (``refs/pr/1``)."""
    joined = "/".join(rest)
    for ref in sorted(repo.refs, key=len, reverse=True):
        if joined == ref or joined.startswith(ref + "/"):
            return ref, joined[len(ref):].strip("/")
    head, _, tail = joined.partition("/")
    return head, tail


def _git_oid(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def _tree(files: dict[str, bytes], sub: str, recursive: bool) -> list[dict[str, Any]]:
    prefix = sub.strip("/") + "/" if sub.strip("/") else ""
    entries: dict[str, dict[str, Any]] = {}
    for path, content in sorted(files.items()):
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix):]
        pieces = rest.split("/")
        for depth in range(1, len(pieces)):
            folder = prefix + "/".join(pieces[:depth])
            if recursive or depth == 1:
                entries.setdefault(folder, {"type": "directory", "oid": _git_oid(folder.encode()), "size": 0,
                                            "path": folder})
        if recursive or len(pieces) == 1:
            entries[path] = {"type": "file", "oid": _git_oid(content), "size": len(content), "path": path}
    return list(entries.values())


def _error(status: int, message: str, code: str | None = None, url: str | None = None) -> Response:
    headers = {"X-Error-Message": message}
    if code:
        headers["X-Error-Code"] = code
    body: dict[str, Any] = {"error": message}
    if url:
        body["url"] = url
    return JSONResponse(body, status_code=status, headers=headers)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8990)
    args = parser.parse_args()
    with HfHubDouble(port=args.port) as hub:
        print(f"hf hub double on {hub.url} (token {hub.token})", flush=True)
        threading.Event().wait()
