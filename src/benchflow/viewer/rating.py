"""``bench view --rate STORE``: the blind rating page over a preference store.

The server holds the store; the browser only ever gets opaque ids. A rater
names themselves (a person) or rates as a guest; each pair they get is first
persisted as an assignment (so ``bench assess assign`` can bind it), then the
page shows both outputs side by side in sandboxed frames with the frozen
rubric's aspects, and the answer is written to the store as a vote.

Endpoints::

    GET  /                          the rating page (static/rate.html)
    GET  /api/rate/setup            rubric aspects and the number of pairs
    POST /api/rate/next  {rater, kind}          the rater's open assignment, or a new one; {"done": true} at the end
    POST /api/rate/vote  {rater, assignment_id, choice, scores?, reason?}   records the vote
    GET  /outputs/<output_id>/<path>            a file of an output (CSP sandbox: no script reaches the page)

Outputs are served from the bundle folder without following links, under a
``sandbox`` Content-Security-Policy, and frames get ``sandbox="allow-scripts"``:
an output's script runs in an opaque origin and cannot vote.
"""

from __future__ import annotations

from benchflow.errors import UserError
import html
import json
import mimetypes
import re
import secrets
import threading
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from benchflow.collector import store as collector
from benchflow.collector.records import Assignment, Vote, new_id, now
from benchflow.util import nofollow

from .app import LOOPBACK_HOSTS, STATIC_DIR, SecurityHeaders

SOURCE = "bench view --rate"
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
OUTPUT_CSP = ("sandbox allow-scripts; default-src 'self' 'unsafe-inline' data: blob:; connect-src 'none'; "
              "form-action 'none'; frame-ancestors 'self'")
_RATER = re.compile(r"^[\w.@+-][\w .@+-]{0,62}[\w.@+-]$|^[\w.@+-]$")


class RatingError(UserError, ValueError):
    """A request the page should not have sent: answered 400 with the message."""


class Rating:
    """Handlers over one store; writes are serialised by a lock (SQLite also waits on busy)."""

    def __init__(self, store_path: Path) -> None:
        self.db = collector.db_path(store_path)
        conn = collector.open_store(self.db)  # applies pending migrations once, refuses a non-store
        try:
            self.meta = collector.read_meta(conn)
            self.pairs = collector.pairs(conn)
            self.outputs = collector.outputs(conn)
        finally:
            conn.close()
        self.bundle = Path(self.meta.get("bundle") or self.db.parent.parent / f"{self.db.parent.name}-outputs")
        self.rubric = json.loads(self.meta["rubric"]) if "rubric" in self.meta else None
        self.lock = threading.Lock()

    # -- helpers -----------------------------------------------------------
    def _side(self, output_id: str) -> dict[str, Any]:
        output = self.outputs[output_id]
        entry = output.entry or ""
        return {"output_id": output_id, "url": f"/outputs/{output_id}/{entry}"}

    def _golden(self, task_id: str, task_version: str) -> dict[str, Any] | None:
        if self.meta.get("golden") != "bar":
            return None
        for output in self.outputs.values():
            if output.kind == "golden" and (output.task_id, output.task_version) == (task_id, task_version):
                return self._side(output.output_id)
        return None

    @staticmethod
    def _rater(body: dict[str, Any]) -> tuple[str, str]:
        rater, kind = body.get("rater"), body.get("kind", "person")
        if kind not in ("person", "guest"):
            raise RatingError("kind must be person or guest")
        if kind == "guest" and not rater:
            rater = f"guest-{secrets.token_hex(4)}"
        if not isinstance(rater, str) or not _RATER.match(rater):
            raise RatingError("a rater name is 1-64 letters, digits, spaces or . @ + - _")
        return rater, kind

    # -- endpoints ---------------------------------------------------------
    def setup(self) -> dict[str, Any]:
        aspects = self.rubric["aspects"] if self.rubric else []
        return {"aspects": aspects, "pairs": len(self.pairs)}

    def next(self, body: dict[str, Any]) -> dict[str, Any]:
        rater, kind = self._rater(body)
        with self.lock:
            conn = collector.open_store(self.db)
            try:
                mine = collector.assignments(conn, rater)
                voted = {v.assignment_id for v in collector.votes(conn) if v.rater_id == rater}
                assigned = {a.pair_id for a in mine}
                open_one = next((a for a in mine if a.assignment_id not in voted), None)
                if open_one is None:
                    pair = next((p for p in self.pairs if p.pair_id not in assigned), None)
                    if pair is None:
                        return {"done": True, "rater": rater, "kind": kind, "voted": len(voted),
                                "total": len(self.pairs)}
                    open_one = Assignment(assignment_id=new_id("a"), rater_id=rater, rater_kind=kind,
                                          pair_id=pair.pair_id)
                    collector.add_assignment(conn, open_one)
            finally:
                conn.close()
        pair = next(p for p in self.pairs if p.pair_id == open_one.pair_id)
        return {"done": False, "rater": rater, "kind": open_one.rater_kind, "assignment_id": open_one.assignment_id,
                "pair_id": pair.pair_id, "left": self._side(pair.left_output), "right": self._side(pair.right_output),
                "golden": self._golden(pair.task_id, pair.task_version), "voted": len(voted),
                "total": len(self.pairs)}

    def _scores(self, raw: Any, left: str, right: str) -> dict[tuple[str, str], float]:
        if not raw:
            return {}
        if not isinstance(raw, dict) or self.rubric is None:
            raise RatingError("scores need a rubric frozen in the store")
        aspects = {a["id"]: a for a in self.rubric["aspects"]}
        out: dict[tuple[str, str], float] = {}
        for side, values in raw.items():
            if side not in ("left", "right") or not isinstance(values, dict):
                raise RatingError("scores map left/right to {aspect: number}")
            for aspect, value in values.items():
                spec = aspects.get(aspect)
                if spec is None or isinstance(value, bool) or not isinstance(value, int | float):
                    raise RatingError(f"score {side}.{aspect}: not an aspect of the rubric, or not a number")
                if not spec["min"] <= value <= spec["max"]:
                    raise RatingError(f"score {side}.{aspect}: {value} is outside {spec['min']}..{spec['max']}")
                out[(left if side == "left" else right, aspect)] = float(value)
        return out

    def vote(self, body: dict[str, Any]) -> dict[str, Any]:
        rater = body.get("rater")
        if not isinstance(rater, str) or not _RATER.match(rater):
            raise RatingError("give the rater name /api/rate/next returned")
        choice = body.get("choice")
        if choice not in ("left", "right", "tie", "skip"):
            raise RatingError("choice must be left, right, tie or skip")
        reason = body.get("reason") or None
        if reason is not None and (not isinstance(reason, str) or len(reason) > 4000):
            raise RatingError("reason must be text of at most 4000 characters")
        with self.lock:
            conn = collector.open_store(self.db)
            try:
                assignment = collector.get_assignment(conn, str(body.get("assignment_id")))
                if assignment is None or assignment.rater_id != rater:
                    raise LookupError("no such assignment for this rater")
                if collector.votes(conn, assignment_id=assignment.assignment_id):
                    raise RatingError("this pair already has your vote")
                pair = next(p for p in self.pairs if p.pair_id == assignment.pair_id)
                scores = {} if choice == "skip" else self._scores(body.get("scores"), pair.left_output,
                                                                  pair.right_output)
                collector.add_vote(conn, Vote(
                    vote_id=new_id("v"), rater_id=rater, rater_kind=assignment.rater_kind,
                    left_output=pair.left_output, right_output=pair.right_output, choice=choice,
                    pair_id=pair.pair_id, assignment_id=assignment.assignment_id, reason=reason, source=SOURCE,
                    shown_at=assignment.created_at, created_at=now(), scores=scores))
            finally:
                conn.close()
        return {"recorded": True}

    def output_file(self, output_id: str, rel: str) -> Response:
        output = self.outputs.get(output_id)
        if output is None:
            raise LookupError(output_id)
        root = (self.bundle / (output.bundle_path or output_id)).resolve()
        parts = [p for p in rel.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise LookupError(rel)
        target = root.joinpath(*parts)
        headers = {"Content-Security-Policy": OUTPUT_CSP}
        if target.is_dir() and not target.is_symlink():
            return HTMLResponse(_listing(output_id, rel, target), headers=headers)
        try:
            data = nofollow.read_bytes(target, root=root)
        except (OSError, nofollow.UnsafeFile) as exc:
            raise LookupError(rel) from exc
        media = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        return Response(data, media_type=media, headers=headers)


def _listing(output_id: str, rel: str, folder: Path) -> str:
    base = f"/outputs/{output_id}/{rel.strip('/') + '/' if rel.strip('/') else ''}"
    items = sorted(p for p in folder.iterdir() if not p.is_symlink())
    links = "".join(f'<li><a href="{html.escape(base + p.name + ("/" if p.is_dir() else ""))}">'
                    f"{html.escape(p.name)}{'/' if p.is_dir() else ''}</a></li>" for p in items)
    return f"<!doctype html><meta charset=utf-8><title>files</title><ul>{links or '<li>(empty)</li>'}</ul>"


def create_rating_app(store_path: Path) -> Starlette:
    """The rating page's app for one store; only loopback Host headers are answered."""
    rating = Rating(store_path)

    async def body_of(request: Request) -> dict[str, Any]:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise RatingError("send JSON (application/json)")
        try:
            body = await request.json()
        except ValueError as exc:
            raise RatingError("the body is not JSON") from exc
        if not isinstance(body, dict):
            raise RatingError("the body must be a JSON object")
        return body

    def guarded(handler):
        async def wrapped(request: Request) -> Response:
            from starlette.concurrency import run_in_threadpool

            try:
                return await handler(request, run_in_threadpool)
            except LookupError as exc:
                return JSONResponse({"error": f"not found: {exc}"}, status_code=404)
            except RatingError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
        return wrapped

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "rate.html", headers={"Content-Security-Policy": PAGE_CSP})

    async def setup(request: Request, pool) -> Response:
        return JSONResponse(rating.setup())

    async def next_pair(request: Request, pool) -> Response:
        return JSONResponse(await pool(rating.next, await body_of(request)))

    async def vote(request: Request, pool) -> Response:
        return JSONResponse(await pool(rating.vote, await body_of(request)))

    async def output(request: Request, pool) -> Response:
        return await pool(rating.output_file, request.path_params["output_id"], request.path_params.get("rel", ""))

    routes = [
        Route("/", page),
        Route("/api/rate/setup", guarded(setup)),
        Route("/api/rate/next", guarded(next_pair), methods=["POST"]),
        Route("/api/rate/vote", guarded(vote), methods=["POST"]),
        Route("/outputs/{output_id}/{rel:path}", guarded(output)),
        Route("/outputs/{output_id}/", guarded(output)),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_HOSTS), Middleware(SecurityHeaders)]
    app = Starlette(routes=routes, middleware=middleware)
    app.state.rating = rating
    return app


def serve_rating(store_path: Path, *, port: int = 8888, open_browser: bool | None = None) -> int:
    """Serve the rating page for ``store_path`` on loopback until Ctrl-C; returns the exit code (0)."""
    from .server import run_app

    app = create_rating_app(store_path)
    rating: Rating = app.state.rating
    run_app(app, port, f"Rating {len(rating.pairs)} blind pairs of {rating.db}", open_browser=open_browser)
    return 0
