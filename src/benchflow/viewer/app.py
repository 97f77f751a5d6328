"""The viewer's Starlette app: one static page plus JSON endpoints over ``benchflow.results``.

Every job and trial is read through ``benchflow.results``; this module only
maps ids (paths relative to ROLLOUT_DIR, see :mod:`.sources`) to those calls
and hands their documents to the page as JSON. The page renders everything as
text, and the responses carry a Content-Security-Policy that forbids inline
script, so a ``<script>`` in a trajectory is shown and never run.

Endpoints (all GET unless noted)::

    /api/overview                       what was opened; job list; confirm bar settings; preference
                                        ratings (ratings.v1.json) near the jobs, see ratings.py
    /api/job?id=J                       benchflow.job document, each trial with its "id"
    /api/trial?id=T                     benchflow.trial document + trajectory totals, branches, review, human assessment;
                                        a scene's turns each with the "id" of its own folder (its trajectory)
    /api/trajectory?id=T&kind=acp|llm&offset=&limit=   one page of events (acp: a Harbor trial's ATIF steps
                                        as the same events, see atif.py)
    /api/compare?a=J&b=J                benchflow.comparison document
    /api/outcomes?id=J[&id=J2…][&part=pareto|outcomes|training]
                                        benchflow.outcomes/1 (id "." = every job shown); see outcomes.py
    /api/explain[?code=C&job=&task=]    the ``bench explain`` catalogue, or one entry
    POST /api/decision {"decision": "approved"|"rejected"}   only with --confirm
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .cache import JobCache
from .sources import ViewSource, is_trial, is_trial_dir

STATIC_DIR = Path(__file__).parent / "static"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost"]
PAGE_LIMIT_MAX = 1000
"""Largest trajectory page one request may ask for; the page asks for 200."""

SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class ConfirmState:
    """The --confirm bar: its text, and the decision once a button was pressed."""

    redaction_summary: str | None = None
    decision: str | None = None
    on_decision: Callable[[str], None] | None = field(default=None, repr=False)


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)


def _error(status: int, message: str) -> JSONResponse:
    return _json({"error": message}, status)


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc
    return max(low, min(high, value))


def explain_catalogue() -> dict[str, Any]:
    """The ``bench explain`` catalogue as ``{code: entry}``."""
    from benchflow.results import explain

    return {entry.code: explain.as_json(entry) for entry in explain.catalogue()}


class Viewer:
    """Request handlers bound to one :class:`ViewSource`."""

    def __init__(self, source: ViewSource, confirm: ConfirmState | None = None) -> None:
        self.source = source
        self.confirm = confirm
        self._file_kinds: dict[Path, str] = {}
        self.cache = JobCache()

    def _file_kind(self, path: Path) -> str:
        """Whether a lone trajectory file holds ACP events or model exchanges (judged once, by its first event)."""
        from benchflow.results import iter_trajectory

        if path not in self._file_kinds:
            first, _ = iter_trajectory(path, kind="acp", offset=0, limit=1)
            is_llm = bool(first) and "request" in first[0] and "response" in first[0]
            self._file_kinds[path] = "llm" if is_llm else "acp"
        return self._file_kinds[path]

    # -- lookups -----------------------------------------------------------
    def _job_path(self, ident: str) -> Path:
        path = self.source.resolve(ident)
        if path not in self.source.jobs():
            raise LookupError(ident)
        return path

    def _trial_path(self, ident: str) -> Path:
        path = self.source.resolve(ident)
        if self.source.kind == "trajectory":
            if path != self.source.root:
                raise LookupError(ident)
            return path
        if not is_trial(path):
            raise LookupError(ident)
        return path

    # -- endpoints ---------------------------------------------------------
    def overview(self, request: Request) -> Response:
        return _json(self.overview_document())

    def overview_document(self) -> dict[str, Any]:
        jobs = []
        for path in self.source.jobs():
            job = self.cache.job(path)
            jobs.append({"id": self.source.ident(path), "name": job.name, "settings": job.settings,
                         "denominators": job.denominators, "n_trials": len(job.trials),
                         "running": job.running})
        trial = None
        if self.source.kind in ("trial", "trajectory"):
            trial = self.source.ident(self.source.root)
        confirm = None
        if self.confirm is not None:
            confirm = {"redaction_summary": self.confirm.redaction_summary, "decision": self.confirm.decision}
        from .ratings import find_ratings

        ratings = find_ratings(self.source.root, self.source.jobs(), self.source.ident)
        return {"kind": self.source.kind, "root": str(self.source.root), "jobs": jobs, "trial": trial,
                "confirm": confirm, "ratings": ratings}

    def job(self, request: Request) -> Response:
        return _json(self.job_document(self._job_path(request.query_params.get("id", ""))))

    def job_document(self, path: Path) -> dict[str, Any]:
        doc = self.cache.job(path).model_dump(mode="json")
        for row in doc.get("trials", []):
            row["id"] = self._trial_ident(row.get("path"))
        doc["id"] = self.source.ident(path)
        return doc

    def outcomes(self, request: Request) -> Response:
        from .outcomes import PARTS

        part = request.query_params.get("part")
        if part is not None and part not in PARTS:
            return _error(400, f"part must be one of {', '.join(PARTS)}")
        return _json(self.outcomes_document(request.query_params.getlist("id") or ["."],
                                            (part,) if part else PARTS))

    def outcomes_document(self, idents: list[str], parts: tuple[str, ...]) -> dict[str, Any]:
        """``benchflow.outcomes/1`` over the jobs named by ``idents`` ("." = every job shown), cached."""
        from .outcomes import outcomes_document

        paths: list[Path] = []
        for ident in idents:
            for path in (self.source.jobs() if ident == "." else [self._job_path(ident)]):
                if path not in paths:
                    paths.append(path)
        if not paths:
            raise LookupError("no job to draw (open a job folder or a folder of jobs)")

        document: dict[str, Any] = {}
        for part in parts:  # cached part by part: the warm-up's Pareto serves the page's first request
            def build(part: str = part) -> dict[str, Any]:
                jobs = [(self.source.ident(path), self.cache.job(path)) for path in paths]
                return outcomes_document(jobs, self._trial_ident, (part,))

            document.update(self.cache.derived((tuple(paths), part), paths, build))
        return document

    def warm(self) -> None:
        """Read every job and build the folder's outcomes once, so the first page load finds them ready."""
        if self.source.jobs():
            self.outcomes_document(["."], ("pareto", "outcomes"))

    def _trial_ident(self, path: str | None) -> str | None:
        if not path:
            return None
        try:
            return self.source.ident(Path(path))
        except ValueError:  # a trial the reader found outside ROLLOUT_DIR (results.jsonl source)
            return None

    def trial(self, request: Request) -> Response:
        return _json(self.trial_document(self._trial_path(request.query_params.get("id", ""))))

    def trial_document(self, path: Path) -> dict[str, Any]:
        from benchflow.results import load_trial

        totals = {kind: self._page(path, kind, 0, 0)[1] for kind in ("acp", "llm")}
        if path.is_file() or not is_trial_dir(path):  # a lone trajectory file, or a session with only trajectory/
            return {"kind": "benchflow.trial", "id": self.source.ident(path), "name": path.name,
                    "path": str(path), "summary": None, "totals": totals, "turn": _turn_of(path)}
        doc = load_trial(path).model_dump(mode="json")
        doc.pop("trajectories", None)
        doc["id"] = self.source.ident(path)
        doc["totals"] = totals
        from .branches import branch_tree

        doc["branches"] = branch_tree(path, self.source.ident)
        for turn in (doc.get("summary") or {}).get("turns") or []:  # a scene's turn: its own trajectory page
            folder = path / turn["folder"]
            turn["id"] = self.source.ident(folder) if turn.get("has_trajectory") and folder.is_dir() else None
        from benchflow.jobs.layout import TrialPaths
        from benchflow.results.review import review_detail

        doc["review"] = review_detail(TrialPaths(path))
        from benchflow.assess.show import trial_assessment

        doc["human_assessment"] = trial_assessment(path)
        return doc

    def _page(self, path: Path, kind: str, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        from benchflow.results import iter_trajectory

        if path.is_file() and kind != self._file_kind(path):
            return [], 0
        if kind == "acp" and path.is_dir():  # a Harbor trial: its agent's ATIF steps as events
            from .atif import atif_events

            events = atif_events(path)
            if events is not None:
                return events[offset:offset + limit], len(events)
        return iter_trajectory(path, kind=kind, offset=offset, limit=limit)

    def trajectory(self, request: Request) -> Response:
        path = self._trial_path(request.query_params.get("id", ""))
        kind = request.query_params.get("kind", "acp")
        if kind not in ("acp", "llm"):
            return _error(400, "kind must be acp or llm")
        offset = _int_param(request, "offset", 0, 0, 2**31)
        limit = _int_param(request, "limit", 200, 1, PAGE_LIMIT_MAX)
        return _json(self.trajectory_page(path, kind, offset, limit))

    def trajectory_page(self, path: Path, kind: str, offset: int, limit: int) -> dict[str, Any]:
        events, total = self._page(path, kind, offset, limit)
        return {"kind": kind, "offset": offset, "limit": limit, "total": total, "events": events}

    def compare(self, request: Request) -> Response:
        from benchflow.results import compare

        a = self._job_path(request.query_params.get("a", ""))
        b = self._job_path(request.query_params.get("b", ""))
        doc = compare(a, b).model_dump(mode="json")
        doc["a"]["id"], doc["b"]["id"] = self.source.ident(a), self.source.ident(b)
        return _json(doc)

    def explain(self, request: Request) -> Response:
        """The whole catalogue, or with ``code`` one entry ({job}/{task} filled from ``job``/``task``)."""
        from benchflow.results import explain

        code = request.query_params.get("code")
        if not code:
            return _json(explain_catalogue())
        try:
            entry = explain.lookup(code, job=request.query_params.get("job"), task=request.query_params.get("task"))
        except explain.UnknownCode as exc:
            raise LookupError(str(exc)) from exc
        return _json(explain.as_json(entry))

    async def decision(self, request: Request) -> Response:
        if self.confirm is None:
            return _error(404, "not started with --confirm")
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _error(415, "send the decision as application/json")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON")
        choice = body.get("decision") if isinstance(body, dict) else None
        if choice not in ("approved", "rejected"):
            return _error(400, "decision must be approved or rejected")
        if self.confirm.decision is None:
            self.confirm.decision = choice
            if self.confirm.on_decision is not None:
                self.confirm.on_decision(choice)
        return _json({"decision": self.confirm.decision})


def _turn_of(path: Path) -> dict[str, Any] | None:
    """A scene turn's folder (``turns/<NN>-<role>``): its turn.json, so the page can say which turn it shows."""
    from benchflow.records import read_optional
    from benchflow.records.turns import TurnRecord

    if path.is_file() or path.parent.name != "turns":
        return None
    turn = read_optional(TurnRecord, path / "turn.json", [])
    return turn.to_json() if turn is not None else None


def _guard(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """Unknown ids become 404 and bad parameters 400, each with a one-line JSON error.

    Synchronous handlers (the ones that read files) run in the thread pool so a
    large job never stalls the server.
    """

    async def wrapped(request: Request) -> Response:
        from benchflow.errors import BenchError

        try:
            if inspect.iscoroutinefunction(handler):
                return await handler(request)
            return await run_in_threadpool(handler, request)
        except LookupError as exc:
            return _error(404, f"not found: {exc}")
        except (ValueError, BenchError) as exc:
            return _error(400, str(exc))

    return wrapped


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every response (static files too)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                present = {key.lower() for key, _ in message.get("headers", [])}
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                         if k.lower().encode() not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def index(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "index.html")


def create_app(source: ViewSource, *, confirm: ConfirmState | None = None) -> Starlette:
    """The viewer app for ``source``.

    Only requests whose Host names the loopback address are answered, so a web
    page elsewhere cannot reach the viewer through DNS rebinding.
    """
    viewer = Viewer(source, confirm)
    routes = [
        Route("/", index),
        Route("/api/overview", _guard(viewer.overview)),
        Route("/api/job", _guard(viewer.job)),
        Route("/api/trial", _guard(viewer.trial)),
        Route("/api/trajectory", _guard(viewer.trajectory)),
        Route("/api/compare", _guard(viewer.compare)),
        Route("/api/outcomes", _guard(viewer.outcomes)),
        Route("/api/explain", _guard(viewer.explain)),
        Route("/api/decision", _guard(viewer.decision), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_HOSTS),
                  Middleware(SecurityHeaders)]
    app = Starlette(routes=routes, middleware=middleware)
    app.state.viewer = viewer
    return app
