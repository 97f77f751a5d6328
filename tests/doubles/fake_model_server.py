"""Test double: a fake OpenAI-/Anthropic-/Gemini-compatible model server on loopback.

It answers OpenAI Chat Completions (``/v1/chat/completions``), OpenAI
Responses (``/v1/responses``), Anthropic Messages (``/v1/messages``) and Gemini
(``/v1beta/models/M:generateContent`` / ``:streamGenerateContent``), streamed
(SSE) and not, always with the same content and the same usage (below), and
records every request it gets (headers included) in :attr:`FakeModelServer.requests`.
It also answers token counts (``/v1/messages/count_tokens``, Gemini
``:countTokens``) and ``GET /v1/models``. Any other path (``/v1/batches``,
``/v1/files/…``) is answered 200 and recorded like the rest, as a real
provider account would serve it: a test sees whether the gateway let it through.

On request it fails: send header ``x-fake-status: 429`` (or use a model id
``fake-error-429``) to get that status with the API's error body. A model id
containing ``tool`` makes the reply a tool call instead of text. Header
``x-fake-chunk-delay-ms: 200`` spaces streamed Chat Completions chunks apart.
Chat Completions answer token data the way vLLM does when asked:
``return_token_ids`` adds ``prompt_token_ids`` (:func:`prompt_ids`) and each
choice's ``token_ids`` (:data:`SAMPLED_IDS`); ``logprobs`` adds
``logprobs.content`` (:data:`LOGPROBS`), tokens as ``token_id:<id>`` with
``return_tokens_as_token_ids``.

Run it alone: ``python tests/doubles/fake_model_server.py --port 8999``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

CONTENT = "Hello from the fake model."
PIECES = ["Hello ", "from the ", "fake model."]
TOOL_NAME = "bash"
TOOL_ARGS = {"command": "echo hello > hello.txt"}

# Fixed usage, the same call counted the way each API counts.
INPUT_UNCACHED, CACHE_READ, CACHE_WRITE, OUTPUT = 10, 5, 3, 7
OPENAI_USAGE = {"prompt_tokens": INPUT_UNCACHED + CACHE_READ, "completion_tokens": OUTPUT,
                "total_tokens": INPUT_UNCACHED + CACHE_READ + OUTPUT,
                "prompt_tokens_details": {"cached_tokens": CACHE_READ}}
RESPONSES_USAGE = {"input_tokens": INPUT_UNCACHED + CACHE_READ, "output_tokens": OUTPUT,
                   "total_tokens": INPUT_UNCACHED + CACHE_READ + OUTPUT,
                   "input_tokens_details": {"cached_tokens": CACHE_READ},
                   "output_tokens_details": {"reasoning_tokens": 0}}
ANTHROPIC_USAGE = {"input_tokens": INPUT_UNCACHED, "output_tokens": OUTPUT,
                   "cache_read_input_tokens": CACHE_READ, "cache_creation_input_tokens": CACHE_WRITE}
GEMINI_USAGE = {"promptTokenCount": INPUT_UNCACHED + CACHE_READ, "candidatesTokenCount": OUTPUT,
                "cachedContentTokenCount": CACHE_READ, "totalTokenCount": INPUT_UNCACHED + CACHE_READ + OUTPUT}
SAMPLED_IDS = [11, 12, 13]
LOGPROBS = [-0.5, -0.25, -0.125]


def prompt_ids(messages: Any) -> list[int]:
    """Deterministic stand-in prompt token ids: one per message, its content length."""
    return [len(str(m.get("content") or "")) for m in messages or [] if isinstance(m, dict)]


def _token_fields(body: dict[str, Any], part: slice = slice(None)) -> dict[str, Any]:
    """The token data a vLLM choice (or chunk choice) carries for the sampled ids in ``part``."""
    out: dict[str, Any] = {}
    if body.get("return_token_ids"):
        out["token_ids"] = SAMPLED_IDS[part]
    if body.get("logprobs"):
        as_ids = body.get("return_tokens_as_token_ids")
        out["logprobs"] = {"content": [{"token": f"token_id:{i}" if as_ids else f"t{i}", "logprob": lp}
                                       for i, lp in zip(SAMPLED_IDS[part], LOGPROBS[part], strict=True)]}
    return out


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n").encode()


def _error(status: int, anthropic: bool) -> JSONResponse:
    kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
    message = f"fake upstream error {status}"
    if anthropic:
        return JSONResponse({"type": "error", "error": {"type": kind, "message": message}}, status_code=status)
    return JSONResponse({"error": {"message": message, "type": kind, "code": str(status)}}, status_code=status)


class FakeModelServer:
    """The fake upstream; use as a context manager or :meth:`start` / :meth:`stop`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, keep_alive_sec: float = 5) -> None:
        self.host = host
        self.port = port
        self.keep_alive_sec = keep_alive_sec
        self.requests: list[dict[str, Any]] = []
        self.content = CONTENT
        """The text of every non-streamed reply (a test scripts a judge's verdict here)."""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1beta/models/{target:path}", self._gemini, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/{anything:path}", self._anything, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
        ])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # --- lifecycle -----------------------------------------------------------------
    def start(self) -> FakeModelServer:
        # proto=IPPROTO_TCP so asyncio sets TCP_NODELAY on each connection (create_server
        # leaves proto 0, and keep-alive replies then wait ~40 ms for a delayed ACK).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(1024)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, lifespan="off", log_level="warning", access_log=False, http="h11",
                                loop="asyncio", timeout_keep_alive=self.keep_alive_sec)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve(sockets=[sock])), daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.002)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- shared ----------------------------------------------------------------------
    async def _take(self, request: Request) -> tuple[dict[str, Any], int | None]:
        raw = await request.body()
        body = json.loads(raw) if raw else {}
        self.requests.append({"method": request.method, "path": request.url.path, "query": request.url.query,
                              "headers": dict(request.headers), "body": body})
        status = request.headers.get("x-fake-status")
        model = str(body.get("model", ""))
        if not status and model.startswith("fake-error-"):
            status = model.rsplit("-", 1)[1]
        return body, int(status) if status else None

    async def _anything(self, request: Request) -> Response:
        raw = await request.body()
        self.requests.append({"method": request.method, "path": request.url.path, "query": request.url.query,
                              "headers": dict(request.headers), "body_bytes": len(raw)})
        return JSONResponse({"object": "fake", "path": request.url.path})

    async def _count_tokens(self, request: Request) -> Response:
        await self._take(request)
        return JSONResponse({"input_tokens": INPUT_UNCACHED})

    async def _models(self, request: Request) -> Response:
        self.requests.append({"method": "GET", "path": request.url.path, "headers": dict(request.headers)})
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    # --- OpenAI Chat Completions -------------------------------------------------------
    async def _chat(self, request: Request) -> Response:
        body, status = await self._take(request)
        if status:
            return _error(status, anthropic=False)
        model, tool = body.get("model", "fake-model"), "tool" in str(body.get("model", ""))
        base: dict[str, Any] = {"id": "chatcmpl-fake", "created": 1700000000, "model": model}
        if body.get("return_token_ids"):
            base["prompt_token_ids"] = prompt_ids(body.get("messages"))
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": None if tool else self.content}
            if tool:
                message["tool_calls"] = [{"id": "call_1", "type": "function",
                                          "function": {"name": TOOL_NAME, "arguments": json.dumps(TOOL_ARGS)}}]
            return JSONResponse({**base, "object": "chat.completion", "usage": OPENAI_USAGE, "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop",
                 **_token_fields(body)}]})
        include_usage = (body.get("stream_options") or {}).get("include_usage")
        delay = float(request.headers.get("x-fake-chunk-delay-ms", 0)) / 1000

        def chunk(delta: dict[str, Any], finish: str | None = None, part: slice | None = None) -> bytes:
            tokens = _token_fields(body, part) if part is not None else {}
            return _sse({**base, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **tokens}]})

        async def events():
            yield chunk({"role": "assistant", "content": ""})
            if tool:
                yield chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                             "function": {"name": TOOL_NAME, "arguments": ""}}]})
                text = json.dumps(TOOL_ARGS)
                for part in (text[:10], text[10:]):
                    yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
            else:
                for index, piece in enumerate(PIECES):
                    yield chunk({"content": piece}, part=slice(index, index + 1))
                    await asyncio.sleep(delay)
            yield chunk({}, "tool_calls" if tool else "stop")
            if include_usage:
                yield _sse({**base, "object": "chat.completion.chunk", "choices": [], "usage": OPENAI_USAGE})
            yield _sse("[DONE]")

        return StreamingResponse(events(), media_type="text/event-stream")

    # --- OpenAI Responses ----------------------------------------------------------------
    async def _responses(self, request: Request) -> Response:
        body, status = await self._take(request)
        if status:
            return _error(status, anthropic=False)
        message = {"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": CONTENT, "annotations": []}]}
        done = {"id": "resp_fake", "object": "response", "created_at": 1700000000, "status": "completed",
                "model": body.get("model", "fake-model"), "output": [message], "usage": RESPONSES_USAGE}
        if not body.get("stream"):
            return JSONResponse(done)

        async def events():
            yield _sse({"type": "response.created", "response": {**done, "status": "in_progress", "output": [],
                                                                  "usage": None}}, "response.created")
            for piece in PIECES:
                yield _sse({"type": "response.output_text.delta", "item_id": "msg_fake", "output_index": 0,
                            "content_index": 0, "delta": piece}, "response.output_text.delta")
            yield _sse({"type": "response.output_item.done", "output_index": 0, "item": message},
                       "response.output_item.done")
            yield _sse({"type": "response.completed", "response": done}, "response.completed")

        return StreamingResponse(events(), media_type="text/event-stream")

    # --- Anthropic Messages ----------------------------------------------------------------
    async def _messages(self, request: Request) -> Response:
        body, status = await self._take(request)
        if status:
            return _error(status, anthropic=True)
        model, tool = body.get("model", "fake-model"), "tool" in str(body.get("model", ""))
        block = ({"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": TOOL_ARGS} if tool
                 else {"type": "text", "text": self.content})
        message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                   "content": [block], "stop_reason": "tool_use" if tool else "end_turn",
                   "stop_sequence": None, "usage": ANTHROPIC_USAGE}
        if not body.get("stream"):
            return JSONResponse(message)

        async def events():
            start = {**message, "content": [], "stop_reason": None, "usage": {**ANTHROPIC_USAGE, "output_tokens": 1}}
            yield _sse({"type": "message_start", "message": start}, "message_start")
            if tool:
                yield _sse({"type": "content_block_start", "index": 0,
                            "content_block": {**block, "input": {}}}, "content_block_start")
                text = json.dumps(TOOL_ARGS)
                for part in (text[:10], text[10:]):
                    yield _sse({"type": "content_block_delta", "index": 0,
                                "delta": {"type": "input_json_delta", "partial_json": part}}, "content_block_delta")
            else:
                yield _sse({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}}, "content_block_start")
                for piece in PIECES:
                    yield _sse({"type": "content_block_delta", "index": 0,
                                "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
            yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            yield _sse({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                           "stop_sequence": None},
                        "usage": {"output_tokens": OUTPUT}}, "message_delta")
            yield _sse({"type": "message_stop"}, "message_stop")

        return StreamingResponse(events(), media_type="text/event-stream")

    # --- Gemini ------------------------------------------------------------------------------
    async def _gemini(self, request: Request) -> Response:
        body, status = await self._take(request)
        if status:
            return _error(status, anthropic=False)
        target = request.path_params["target"]
        model = target.split(":", 1)[0]
        if target.endswith(":countTokens"):
            return JSONResponse({"totalTokens": INPUT_UNCACHED})
        if target.endswith(":generateContent"):
            return JSONResponse({"candidates": [{"content": {"role": "model", "parts": [{"text": CONTENT}]},
                                                 "finishReason": "STOP"}],
                                 "usageMetadata": GEMINI_USAGE, "modelVersion": model})

        chunks: list[dict[str, Any]] = []
        for index, piece in enumerate(PIECES):
            chunks.append({"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}}],
                           "modelVersion": model})
            if index == len(PIECES) - 1:
                chunks[-1]["candidates"][0]["finishReason"] = "STOP"
                chunks[-1]["usageMetadata"] = GEMINI_USAGE
        if request.query_params.get("alt") != "sse":  # Gemini streams a JSON array then
            return JSONResponse(chunks)

        async def events():
            for chunk in chunks:
                yield _sse(chunk)

        return StreamingResponse(events(), media_type="text/event-stream")


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the fake model server on loopback.")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = FakeModelServer(port=args.port).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
