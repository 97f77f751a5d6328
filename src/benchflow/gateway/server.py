"""The proxy itself: a Starlette app that checks, forwards, counts and records.

Every request under ``/__benchflow/<trial>/<provider mount>/…`` is checked
against the trial's key, then against :mod:`benchflow.gateway.policy`: only
the providers' model APIs are forwarded; anything else gets 403, never
reaches the provider, and is recorded as refused. Model calls (Chat
Completions, Responses, Messages, Gemini ``generateContent``) are refused if
the trial's budget is spent, forwarded to the provider's real base URL with
the real key, streamed back as they arrive, and counted, priced and recorded.
Look-ups (token counting, model lists) are forwarded and recorded too, but
take no turn of the budget. Every request that carries the trial's key ends
as one line of its ``llm_trajectory.jsonl``. A route with a replay
(:mod:`benchflow.gateway.replay`) answers its model calls from a recording
first, without contacting the provider or spending its budget.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from benchflow.gateway import policy
from benchflow.gateway import tokens as token_capture
from benchflow.gateway.budget import JobBudget
from benchflow.gateway.pricing import Price, price_call
from benchflow.gateway.recorder import Exchange, Recorder
from benchflow.gateway.routes import TrialRoute
from benchflow.gateway.streams import StreamAssembler
from benchflow.gateway.upstream import Upstream, Upstreams
from benchflow.gateway.upstream_client import (
    UpstreamClient,
    UpstreamError,
    UpstreamResponse,
)
from benchflow.gateway.usage import (
    CHAT,
    GEMINI,
    MESSAGES,
    CallUsage,
    model_from_body,
    usage_from_body,
)

_REFUSED_BODY_DRAIN = 1 << 20
"""A refused request's body is read (and dropped) up to this size, so the agent gets the 403 cleanly."""
_DROP_RESPONSE_HEADERS = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding"})


@dataclass
class ProxyState:
    """What the app needs: the upstreams, the registered trials, the shared client."""

    upstreams: Upstreams
    recorder: Recorder
    job_budget: JobBudget
    routes: dict[str, TrialRoute] = field(default_factory=dict)
    client: UpstreamClient | None = None


@dataclass
class _Call:
    """Bookkeeping of one model call while it is in flight."""

    route: TrialRoute
    upstream: Upstream | None
    kind: str | None
    path: str
    request: dict[str, Any]
    started: float
    metadata: dict[str, Any]
    size: int = 0
    ended: float | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _error(status: int, message: str, kind: str | None, error_type: str) -> JSONResponse:
    """An error in the shape the agent's SDK expects for its API."""
    if kind == MESSAGES:
        body: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": message}}
    else:
        body = {"error": {"message": message, "type": error_type, "code": error_type}}
    return JSONResponse(body, status_code=status)


def _presented_keys(request: Request) -> list[tuple[str, str]]:
    """Every (key, slot) the agent sent: SDKs differ in where they put it, some send two."""
    headers = request.headers
    found = []
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        found.append((auth[7:].strip(), "authorization"))
    for name in ("x-api-key", "x-goog-api-key"):
        if headers.get(name):
            found.append((headers[name], name))
    if request.query_params.get("key"):
        found.append((request.query_params["key"], "query"))
    return found


def _response_headers(resp: UpstreamResponse) -> dict[str, str]:
    return {k: v for k, v in resp.headers if k not in _DROP_RESPONSE_HEADERS}


def _parse_body(data: bytes, encoding: str) -> Any:
    """A response body as JSON when it is JSON (gzip/deflate undone first), else the bytes."""
    if encoding in ("gzip", "deflate"):
        try:
            data = zlib.decompress(data, 47)
        except zlib.error:
            return data
    try:
        return json.loads(data) if data else None
    except ValueError:
        return data


class Proxy:
    """The request handler; one per gateway."""

    def __init__(self, state: ProxyState) -> None:
        self.state = state

    async def handle(self, request: Request) -> Response:
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        parts = raw_path.decode("latin-1").split("/", 3)
        if len(parts) < 4 or parts[1] != "__benchflow":
            return _error(404, "BenchFlow gateway: not a gateway path", None, "not_found")
        route = self.state.routes.get(parts[2])
        match = (route.upstreams if route is not None else self.state.upstreams).match("/" + parts[3])
        kind = policy.classify(request.method, match[1]) if match else None
        anthropic = kind == MESSAGES or (match is not None and match[0].provider.protocol == "anthropic-messages")
        shape = MESSAGES if anthropic else kind  # the error body shape the agent's SDK parses
        slot = next((slot for key, slot in _presented_keys(request) if route and route.key_matches(key)), None)
        if route is None or slot is None:
            return _error(401, "BenchFlow gateway: unknown trial or wrong per-trial key", shape,
                          "authentication_error")
        visible_path = "/" + parts[3].partition("/")[2]
        if match is None:
            message = f"BenchFlow gateway: no provider configured on the host for /{parts[3]}"
            return await self._refuse(request, route, None, visible_path, 404, message, shape, "not_found",
                                      "no_provider")
        upstream, rest = match
        if kind is None:
            message = policy.refusal_message(request.method, visible_path)
            return await self._refuse(request, route, upstream, visible_path, 403, message, shape,
                                      "permission_error", policy.NOT_A_MODEL_API)
        body = await request.body()
        url, auth = upstream.prepare(rest, request.url.query, slot)
        headers = policy.upstream_headers(request.headers.items())
        headers.update(auth)
        headers["accept-encoding"] = "identity"
        if kind not in policy.MODEL_CALLS:
            return await self._lookup(request, route, upstream, kind, shape, url, headers, body, visible_path)
        return await self._model_call(request, route, upstream, kind, rest, url, headers, body, visible_path)

    async def _refuse(self, request: Request, route: TrialRoute, upstream: Upstream | None, visible_path: str,
                      status: int, message: str, shape: str | None, error_type: str, reason: str) -> Response:
        """Answer ``status`` without contacting any provider; record the refusal as ``reason`` (no body kept)."""
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > _REFUSED_BODY_DRAIN:
                break
        route.record_forbidden()
        metadata = {"trial_id": route.trial_id, "provider": upstream.name if upstream else None, "call_type": None,
                    "call_purpose": "agent", "refused": reason, "request_bytes": size}
        record_request = {"timestamp": _now(), "method": request.method, "path": visible_path,
                          "headers": dict(request.headers), "body": None}
        reply = _error(status, message, shape, error_type)
        call = _Call(route, upstream, None, visible_path, record_request, time.perf_counter(), metadata)
        self._record(call, status, {}, json.loads(reply.body))
        return reply

    async def _lookup(self, request: Request, route: TrialRoute, upstream: Upstream, kind: str, shape: str | None,
                      url: str, headers: dict[str, str], body: bytes, visible_path: str) -> Response:
        """Forward a token count or model list: recorded, refused once the budget is spent, no turn taken."""
        metadata: dict[str, Any] = {"trial_id": route.trial_id, "provider": upstream.name, "call_type": kind,
                                    "call_purpose": "agent", "stream": False}
        record_request = {"timestamp": _now(), "method": request.method, "path": visible_path,
                          "headers": dict(request.headers), "body": body}
        call = _Call(route, upstream, kind, visible_path, record_request, time.perf_counter(), metadata,
                     size=len(body))
        refusal = route.budget.check()
        if refusal:
            return self._budget_refusal(call, refusal, shape)
        assert self.state.client is not None
        try:
            resp = await self.state.client.send(request.method, url, headers, body)
            try:
                data = await resp.read()
            finally:
                resp.close()
        except UpstreamError as exc:
            message = f"BenchFlow gateway: {exc}"
            metadata["gateway_error"] = message
            route.record_lookup()
            self._record(call, 502, {}, {"error": {"message": message}})
            return _error(502, message, shape, "api_error")
        route.record_lookup()
        call.size, call.ended = len(body) + len(data), time.perf_counter()
        self._record(call, resp.status_code, dict(resp.headers), _parse_body(data, resp.header("content-encoding")))
        return Response(data, status_code=resp.status_code, headers=_response_headers(resp))

    def _budget_refusal(self, call: _Call, reason: str, shape: str | None) -> Response:
        """The 400 for a call made after the trial's budget is spent; recorded, never forwarded."""
        call.route.record_refusal()
        call.metadata["refused"] = reason
        reply = _error(400, call.route.budget.describe(reason), shape, "budget_exceeded")
        self._record(call, reply.status_code, dict(reply.headers), json.loads(reply.body))
        return reply

    async def _model_call(self, request: Request, route: TrialRoute, upstream: Upstream, kind: str, rest: str,
                          url: str, headers: dict[str, str], body: bytes, visible_path: str) -> Response:
        started = time.perf_counter()
        parsed: Any = None
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request_model = parsed.get("model") if isinstance(parsed, dict) else None
        if request_model is None and kind == GEMINI and "/models/" in rest:
            request_model = rest.split("/models/", 1)[1].split(":", 1)[0]
        stream = (isinstance(parsed, dict) and parsed.get("stream") is True) or ":streamGenerateContent" in rest
        metadata: dict[str, Any] = {"trial_id": route.trial_id, "provider": upstream.name, "call_type": kind,
                                    "call_purpose": "agent", "request_model": request_model, "stream": stream}
        record_request = {"timestamp": _now(), "method": request.method, "path": visible_path,
                          "headers": dict(request.headers), "body": parsed if parsed is not None else body}
        call = _Call(route, upstream, kind, rest, record_request, started, metadata, size=len(body))

        if route.replay is not None:  # bench eval continue: answered from the recording until it ends
            answer = route.replay.answer(kind, parsed)
            if answer is not None:
                return await self._replayed(call, answer, parsed)

        refusal = route.budget.try_start()
        if refusal:
            return self._budget_refusal(call, refusal, kind)

        if stream and kind == CHAT and upstream.provider.stream_usage and isinstance(parsed, dict) \
                and "stream_options" not in parsed:
            body = json.dumps({**parsed, "stream_options": {"include_usage": True}}).encode()
            metadata["stream_usage_added"] = True
        if route.capture_tokens and isinstance(parsed, dict):
            asked = token_capture.ask(kind, json.loads(body))
            if asked is not None:
                body = json.dumps(asked).encode()
                metadata["token_capture_requested"] = True

        assert self.state.client is not None
        try:
            resp = await self.state.client.send(request.method, url, headers, body)
        except UpstreamError as exc:
            message = f"BenchFlow gateway: {exc}"
            metadata["gateway_error"] = message
            self._finish(call, 502, {}, {"error": {"message": message}}, None)
            return _error(502, message, kind, "api_error")

        if resp.header("content-type").startswith("text/event-stream"):
            return StreamingResponse(self._relay(call, resp), status_code=resp.status_code,
                                     headers=_response_headers(resp))
        try:
            data = await resp.read()
        except UpstreamError as exc:
            data = b""
            metadata["gateway_error"] = f"BenchFlow gateway: {exc}"
        finally:
            resp.close()
        response_body = _parse_body(data, resp.header("content-encoding"))
        if kind == GEMINI and isinstance(response_body, list):  # streamGenerateContent without alt=sse
            merged = StreamAssembler(kind)
            for chunk in response_body:
                if isinstance(chunk, dict):
                    merged.feed_payload(chunk)
            response_body = merged.body()
        usage = usage_from_body(kind, response_body) if resp.status_code < 400 else None
        call.size, call.ended = len(body) + len(data), time.perf_counter()
        self._finish(call, resp.status_code, dict(resp.headers), response_body, usage)
        return Response(data, status_code=resp.status_code, headers=_response_headers(resp))

    async def _replayed(self, call: _Call, answer: Any, parsed: Any) -> Response:
        """Serve a recorded response (or the replay's refusal, once held); recorded, never counted or priced."""
        served = answer.call
        call.metadata["replayed"] = {"call": served.index if served else None,
                                     "source_line": served.line if served else None,
                                     "diverged": answer.divergence is not None, "refused": served is None}
        call.ended = time.perf_counter()
        self._record(call, answer.status, {}, answer.body)
        deadline = time.monotonic() + answer.hold_sec
        while time.monotonic() < deadline and not call.route.replay.released:  # the engine stops the agent
            await asyncio.sleep(0.1)
        return answer.response(parsed)

    async def _relay(self, call: _Call, resp: UpstreamResponse):
        """Yield the upstream stream to the agent, reassembling a copy for the record."""
        assembler = StreamAssembler(call.kind)
        first_byte: float | None = None
        received = 0
        try:
            async for chunk in resp.iter_bytes():
                received += len(chunk)
                if first_byte is None:
                    first_byte = time.perf_counter()
                try:
                    assembler.feed(chunk)
                except Exception:  # noqa: BLE001 - a parsing slip must never cut the agent's stream
                    call.metadata["stream_parse_error"] = True
                yield chunk
        except UpstreamError as exc:
            call.metadata["gateway_error"] = f"BenchFlow gateway: {exc}"
        finally:
            call.ended = time.perf_counter()
            resp.close()
            if first_byte is not None:
                call.metadata["ttfb_ms"] = round((first_byte - call.started) * 1000, 3)
            call.metadata["n_stream_events"] = assembler.n_events
            call.size += received
            body = assembler.body()
            usage = usage_from_body(call.kind, body) if resp.status_code < 400 else None
            self._finish(call, resp.status_code, dict(resp.headers), body, usage)

    def _finish(self, call: _Call, status: int, headers: dict[str, str], body: Any, usage: CallUsage | None) -> None:
        """Count, price and record a call that the budget admitted."""
        provider_model = model_from_body(body) if isinstance(body, dict) else None
        model = provider_model or call.metadata.get("request_model")
        price = price_call(model, usage, call.upstream.provider.price_provider) if usage else Price(None, None)
        call.route.record_call(status, usage, price, model)
        tokens = usage.total if usage else 0
        call.route.budget.finish(tokens)
        call.route.meter.add(tokens, price.cost_usd)
        call.metadata.update({"provider_model": provider_model, "usage": usage.as_dict() if usage else None,
                              "cost_usd": price.cost_usd, "price_source": price.price_source,
                              "priced_model": price.priced_model})
        captured = token_capture.capture(call.kind, body) if status < 400 else None
        self._record(call, status, headers, body, captured)

    def _record(self, call: _Call, status: int, headers: dict[str, str], body: Any,
                captured: dict[str, Any] | None = None) -> None:
        response = {"timestamp": _now(), "status_code": status, "headers": headers, "body": body}
        secrets = (*self.state.upstreams.secrets(), *call.route.upstreams.secrets(), call.route.key)
        duration_ms = ((call.ended or time.perf_counter()) - call.started) * 1000
        self.state.recorder.submit(Exchange(call.route.llm_trajectory_path, call.request, response, duration_ms,
                                            call.metadata, secrets, size=call.size, token_capture=captured))


async def _health(request: Request) -> Response:
    return JSONResponse({"ok": True})


def build_app(state: ProxyState) -> Starlette:
    """The gateway's ASGI app over ``state``."""
    proxy = Proxy(state)
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(routes=[
        Route("/__health", _health, methods=["GET"]),
        Route("/__benchflow/{rest:path}", proxy.handle, methods=methods),
    ])
