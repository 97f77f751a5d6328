"""The hub's web service: JSON API under ``/api``, HTML pages beside it (:mod:`.pages`).

Reads are public; every write needs ``Authorization: Bearer <token>`` of a
user (:mod:`.tokens`). Uploads are streamed to the blob store's spool while
hashed, never held in memory, and bounded by ``max_upload``. Database calls
and checks run in the thread pool so one slow upload does not stall reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from benchflow.errors import UserError

from . import captures, ingest, pages, store, tokens
from .archives import BadArchive, archive_digest
from .blobs import CHUNK, BlobStore, TooLarge, check_key, receive
from .names import TASK_NAME, DatasetRef, parse_ref

META_FIELDS = ("description", "license", "kind", "source_repo", "source_commit", "exporter")
MAX_PER_PAGE = 500


@dataclass
class Hub:
    engine: Engine
    blobs: BlobStore
    max_upload: int = 4 << 30


class HttpError(Exception):
    """Not a BenchError: the hub server's HTTP answer (status, message), turned into a response by Starlette."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HttpError)
    return JSONResponse({"error": str(exc)}, status_code=exc.status)


def _hub(request: Request) -> Hub:
    return request.app.state.hub


async def _user(request: Request) -> tuple[int, str]:
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header.lower().startswith("bearer ") else None
    if not token:
        raise HttpError(401, "this needs an API token: set BENCHFLOW_HUB_TOKEN (bench hub serve --create-token USER "
                             "makes one)")
    user = await run_in_threadpool(tokens.user_for, _hub(request).engine, token)
    if user is None:
        raise HttpError(401, "the API token is not valid on this hub (check BENCHFLOW_HUB_TOKEN)")
    return user


def _paging(request: Request, default: int = 100, prefix: str = "") -> tuple[int, int]:
    try:
        page = max(1, int(request.query_params.get(f"{prefix}page", "1")))
        per_page = min(MAX_PER_PAGE, max(1, int(request.query_params.get(f"{prefix}per_page", str(default)))))
    except ValueError as exc:
        raise HttpError(400, "page and per_page are positive integers") from exc
    return page, per_page


def _ref(request: Request) -> DatasetRef:
    p = request.path_params
    return DatasetRef(p["org"], p["name"], p["version"])


async def _dataset_or_404(request: Request) -> dict[str, Any]:
    ref = _ref(request)
    row = await run_in_threadpool(store.dataset, _hub(request).engine, ref)
    if row is None:
        raise HttpError(404, f"{ref}: no such dataset version on this hub")
    return row


def archive_url(request: Request, ref: DatasetRef, task: str) -> str:
    return f"{str(request.base_url).rstrip('/')}/api/datasets/{ref.path}/tasks/{task}.tar.gz"


def public_dataset(row: dict[str, Any]) -> dict[str, Any]:
    out = {"name": f"{row['org']}/{row['name']}", "version": row["version"]}
    out.update({key: row.get(key) for key in META_FIELDS})
    out.update(published_at=row["published_at"], n_tasks=row["n_tasks"])
    return out


async def health(_request: Request) -> JSONResponse:
    return JSONResponse({"kind": "benchflow.hub", "ok": True})


async def registry_json(request: Request) -> JSONResponse:
    versions = await run_in_threadpool(store.registry, _hub(request).engine)
    out = []
    for row in versions:
        ref = DatasetRef(row["org"], row["name"], row["version"])
        entry = public_dataset(row)
        entry["tasks"] = [{"name": t["name"], "digest": t["digest"], "archive_url": archive_url(request, ref, t["name"])}
                          for t in row["tasks"]]
        out.append(entry)
    return JSONResponse(out)


async def list_datasets(request: Request) -> JSONResponse:
    page, per_page = _paging(request)
    result = await run_in_threadpool(store.datasets_page, _hub(request).engine, page, per_page)
    return JSONResponse({"datasets": [public_dataset(r) for r in result.rows], "page": page, "per_page": per_page,
                         "total": result.total})


async def show_dataset(request: Request) -> JSONResponse:
    row = await _dataset_or_404(request)
    page, per_page = _paging(request)
    result = await run_in_threadpool(store.tasks_page, _hub(request).engine, row["id"], page, per_page)
    ref = _ref(request)
    body = public_dataset(row)
    body.update(tasks=[{"name": t["name"], "digest": t["digest"], "archive_url": archive_url(request, ref, t["name"])}
                       for t in result.rows], page=page, per_page=per_page, total=result.total)
    return JSONResponse(body)


async def download_task(request: Request) -> Response:
    row = await _dataset_or_404(request)
    task = await run_in_threadpool(store.task, _hub(request).engine, row["id"], request.path_params["task"])
    if task is None:
        raise HttpError(404, f"{_ref(request)} has no task {request.path_params['task']!r}")
    blobs = _hub(request).blobs

    def chunks():
        with blobs.open(task["archive_key"]) as handle:
            while chunk := handle.read(CHUNK):
                yield chunk

    return StreamingResponse(chunks(), media_type="application/gzip",
                             headers={"x-benchflow-task-digest": task["digest"],
                                      "content-length": str(task["archive_size"])})


async def leaderboard(request: Request) -> JSONResponse:
    row = await _dataset_or_404(request)
    page, per_page = _paging(request, default=50)
    result = await run_in_threadpool(store.leaderboard_page, _hub(request).engine, row["id"], page, per_page)
    return JSONResponse({"entries": result.rows, "page": page, "per_page": per_page, "total": result.total})


async def controls(request: Request) -> JSONResponse:
    row = await _dataset_or_404(request)
    found = await run_in_threadpool(store.controls, _hub(request).engine, row["id"])
    return JSONResponse({"dataset": str(_ref(request)), "n_tasks": row["n_tasks"], "controls": found})


async def _receive(request: Request) -> tuple[Path, str, int]:
    hub = _hub(request)
    try:
        return await receive(request.stream(), hub.blobs.spool_dir(), hub.max_upload)
    except TooLarge as exc:
        raise HttpError(413, f"upload {exc}") from exc


async def put_blob(request: Request) -> JSONResponse:
    await _user(request)
    key = request.path_params["key"]
    try:
        check_key(key)
    except ValueError as exc:
        raise HttpError(400, str(exc)) from exc
    path, digest, size = await _receive(request)
    if digest != key:
        path.unlink(missing_ok=True)
        raise HttpError(422, f"the upload's SHA-256 is {digest}, not {key}")
    await run_in_threadpool(_hub(request).blobs.put_file, key, path)
    return JSONResponse({"key": key, "size": size}, status_code=201)


def _check_task_entry(hub: Hub, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict) or not TASK_NAME.match(str(entry.get("name", ""))):
        raise HttpError(422, f"task entry {entry!r}: needs a name (letters, digits, '.', '_', '-')")
    name, key = entry["name"], str(entry.get("archive", ""))
    try:
        check_key(key)
    except ValueError as exc:
        raise HttpError(422, f"task {name}: {exc}") from exc
    if not hub.blobs.has(key):
        raise HttpError(422, f"task {name}: archive {key} was not uploaded (PUT /api/blobs/{key} first)")
    with hub.blobs.open(key) as handle:
        size = handle.seek(0, 2)
    try:
        digest = archive_digest(hub.blobs.local_path(key), scratch=hub.blobs.spool_dir())
    except BadArchive as exc:
        raise HttpError(422, f"task {name}: {exc}") from exc
    if digest != entry.get("digest"):
        raise HttpError(422, f"task {name}: the archive's task digest is {digest}, not {entry.get('digest')}")
    return {"name": name, "digest": digest, "archive_key": key, "archive_size": size}


def _ref_or_422(spec: str, flag: str) -> DatasetRef:
    try:
        return parse_ref(spec, flag)
    except UserError as exc:
        raise HttpError(422, str(exc)) from exc


def _publish(hub: Hub, user_id: int, body: dict[str, Any]) -> DatasetRef:
    ref = _ref_or_422(str(body.get("name", "")), "--name")
    if store.dataset(hub.engine, ref) is not None:
        raise HttpError(409, f"{ref} is already published; versions are immutable, publish a new version")
    entries = body.get("tasks")
    if not isinstance(entries, list) or not entries:
        raise HttpError(422, "tasks: give at least one task")
    names = [e.get("name") for e in entries if isinstance(e, dict)]
    if len(set(names)) != len(names):
        raise HttpError(422, "tasks: task names must be unique within a version")
    rows = [_check_task_entry(hub, entry) for entry in entries]
    meta = {key: (str(body[key]) if body.get(key) is not None else None) for key in META_FIELDS}
    try:
        store.publish(hub.engine, ref, meta, user_id, rows)
    except store.AlreadyPublished as exc:
        raise HttpError(409, f"{ref} is already published; versions are immutable, publish a new version") from exc
    return ref


async def publish(request: Request) -> JSONResponse:
    user_id, _name = await _user(request)
    try:
        body = await request.json()
    except ValueError as exc:
        raise HttpError(400, "the body is not JSON") from exc
    if not isinstance(body, dict):
        raise HttpError(400, "the body is a JSON object")
    ref = await run_in_threadpool(_publish, _hub(request), user_id, body)
    return JSONResponse({"name": str(ref), "url": f"{str(request.base_url).rstrip('/')}/datasets/{ref.path}"},
                        status_code=201)


def _push(hub: Hub, user_id: int, path: Path, digest: str, dataset: str | None, label: str | None) -> dict[str, Any]:
    row = tasks = None
    if dataset:
        ref = _ref_or_422(dataset, "--dataset")
        row = store.dataset(hub.engine, ref)
        if row is None:
            raise HttpError(422, f"--dataset {ref}: no such dataset version on this hub")
        tasks = store.task_digests(hub.engine, row["id"])
    try:
        figures = ingest.check_bundle(path, tasks, dataset)
    except ingest.Refused as exc:
        raise HttpError(422, str(exc)) from exc
    hub.blobs.put_file(digest, path)
    run_id = store.add_run(hub.engine, dataset_id=row["id"] if row else None, label=label, job_name=figures.job_name,
                           user_id=user_id, bundle_key=digest, n_trials=figures.n_trials, entries=figures.entries)
    return {"id": run_id, "dataset": dataset, "label": label, "job_name": figures.job_name,
            "n_trials": figures.n_trials, "entries": figures.entries}


async def push(request: Request) -> JSONResponse:
    user_id, _name = await _user(request)
    path, digest, _size = await _receive(request)
    try:
        out = await run_in_threadpool(_push, _hub(request), user_id, path, digest,
                                      request.query_params.get("dataset") or None,
                                      request.query_params.get("label") or None)
    finally:
        path.unlink(missing_ok=True)
    base = str(request.base_url).rstrip("/")
    out["url"] = f"{base}/datasets/{out['dataset'].replace('@', '/')}" if out["dataset"] else f"{base}/api/runs/{out['id']}"
    return JSONResponse(out, status_code=201)


async def show_run(request: Request) -> JSONResponse:
    try:
        run_id = int(request.path_params["run_id"])
    except ValueError as exc:
        raise HttpError(404, "no such run") from exc
    row = await run_in_threadpool(store.run, _hub(request).engine, run_id)
    if row is None:
        raise HttpError(404, f"run {run_id}: no such run on this hub")
    row.pop("bundle_key", None)
    return JSONResponse(row)


def _verify_capture(hub: Hub, digest: str, key: str) -> None:
    try:
        manifest = captures.verify(hub.blobs.local_path(key))
    except captures.Rejected as exc:
        hub.blobs.delete(key)
        store.set_capture_status(hub.engine, digest, "rejected", str(exc), None)
        return
    store.set_capture_status(hub.engine, digest, "verified", None, manifest)


def verify_pending(hub: Hub) -> int:
    """Verify captures left ``received`` by a hub that stopped before its background check ran."""
    pending = store.pending_captures(hub.engine)
    for digest, key in pending:
        _verify_capture(hub, digest, key)
    return len(pending)


async def upload_capture(request: Request) -> JSONResponse:
    user_id, _name = await _user(request)
    hub = _hub(request)
    path, digest, size = await _receive(request)
    await run_in_threadpool(hub.blobs.put_file, digest, path)
    fresh = await run_in_threadpool(lambda: store.add_capture(hub.engine, digest=digest, user_id=user_id,
                                                              blob_key=digest, size=size))
    if not fresh:
        row = await run_in_threadpool(store.capture, hub.engine, digest)
        return JSONResponse({"digest": digest, "status": row["status"], "reason": row["reason"]})
    task = BackgroundTask(run_in_threadpool, _verify_capture, hub, digest, digest)
    return JSONResponse({"digest": digest, "status": "received"}, status_code=202, background=task)


async def capture_status(request: Request) -> JSONResponse:
    digest = request.path_params["digest"]
    row = await run_in_threadpool(store.capture, _hub(request).engine, digest)
    if row is None:
        raise HttpError(404, f"{digest}: no trajectory with this digest on this hub")
    row.pop("blob_key", None)
    return JSONResponse(row)


def build_app(hub: Hub) -> Starlette:
    routes = [
        Route("/", pages.index),
        Route("/datasets/{org}/{name}/{version}", pages.dataset_page),
        Route("/api/health", health),
        Route("/api/registry.json", registry_json),
        Route("/api/datasets", list_datasets),
        Route("/api/datasets", publish, methods=["POST"]),
        Route("/api/datasets/{org}/{name}/{version}", show_dataset),
        Route("/api/datasets/{org}/{name}/{version}/leaderboard", leaderboard),
        Route("/api/datasets/{org}/{name}/{version}/controls", controls),
        Route("/api/datasets/{org}/{name}/{version}/tasks/{task}.tar.gz", download_task),
        Route("/api/blobs/{key}", put_blob, methods=["PUT"]),
        Route("/api/runs", push, methods=["POST"]),
        Route("/api/runs/{run_id}", show_run),
        Route("/api/trajectories", upload_capture, methods=["POST"]),
        Route("/api/trajectories/{digest}", capture_status),
    ]
    app = Starlette(routes=routes, exception_handlers={HttpError: _error})
    app.state.hub = hub
    return app
