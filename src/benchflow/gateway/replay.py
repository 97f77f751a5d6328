"""Replay: a route of the gateway that answers its agent's model calls from a recording, then goes live.

``bench eval continue`` (:mod:`benchflow.continue_run`) resumes a timed-out trial by running its
agent again in a fresh sandbox and answering the agent's model calls, in order, with the responses
its original trial recorded in ``trajectory/llm_trajectory.jsonl``. The agent re-executes its own
past decisions for real (its tool calls run again), so the workspace and the agent's conversation
are rebuilt without reading any agent internals. When the recording runs out (the cut point where
the original was stopped), the route either lets the calls through to the live provider (the
continuation) or, with ``--replay-only``, answers an error and asks the engine to stop the agent.

What is replayed is what the recorder wrote (:mod:`.recorder`, contracts §3.5; BenchFlow 0.7's
lines have the same ``request``/``response`` keys): every line whose request is a model call,
except calls the gateway refused itself (``metadata.refused``). Only OpenAI Chat Completions calls
are replayed (the API OpenHands speaks); a streamed call gets the recorded body back as
``chat.completion.chunk`` events. A call whose message count differs from the recorded call's is a
divergence: it is noted and the recorded response served anyway, or, ``strict``, answered with
an error that stops the agent.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from benchflow.errors import JobFolderError
from benchflow.gateway import policy
from benchflow.gateway.usage import CHAT, usage_from_body

CUT_POINT = "replay_cut_point"
"""Stop reason once a replay-only route's recording has run out."""
DIVERGED = "replay_divergence"
"""Stop reason (and the trial's error category) after a strict replay diverged."""


class RecordingError(JobFolderError):
    """An ``llm_trajectory.jsonl`` that cannot be replayed; the message names the line and why."""


@dataclass(frozen=True)
class RecordedCall:
    """One recorded model call: what the agent sent (its message count) and what it got back."""

    index: int
    """1-based position among the recording's model calls."""
    line: int
    """1-based line of ``llm_trajectory.jsonl``."""
    status: int
    body: Any
    n_messages: int | None
    provider: str | None = None
    """The gateway provider it went to (``metadata.provider``); None in records without one (0.7's)."""
    request_model: str | None = None

    @property
    def tokens(self) -> int:
        usage = usage_from_body(CHAT, self.body)
        return usage.total if usage else 0


def _messages(body: Any) -> int | None:
    messages = body.get("messages") if isinstance(body, dict) else None
    return len(messages) if isinstance(messages, list) else None


def read_recording(path: Path) -> list[RecordedCall]:
    """The model calls of ``path`` in order.

    Raises:
        RecordingError: a line that is not a recorded exchange, a model call of another API than
            Chat Completions, a successful call whose response is not a JSON object, or no model call.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read it ({exc.strerror}); replay needs the trial's recorded "
                             "model calls") from None
    calls: list[RecordedCall] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except ValueError:
            record = None
        request = record.get("request") if isinstance(record, dict) else None
        response = record.get("response") if isinstance(record, dict) else None
        if not isinstance(request, dict) or not isinstance(response, dict):
            raise RecordingError(f"{path} line {number}: not a recorded exchange (a JSON object with request and "
                                 "response); the calls after it could not be replayed in order")
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        kind = policy.classify(str(request.get("method") or "POST"), str(request.get("path") or "").split("?")[0])
        if kind not in policy.MODEL_CALLS or metadata.get("refused"):
            continue  # a look-up, or a request the gateway answered itself
        if kind != CHAT:
            raise RecordingError(f"{path} line {number}: a {request.get('path')} call; replay answers OpenAI Chat "
                                 "Completions calls only (the API OpenHands speaks)")
        status = response.get("status_code") if isinstance(response.get("status_code"), int) else 200
        body = response.get("body")
        if status < 400 and not isinstance(body, dict):
            raise RecordingError(f"{path} line {number}: the response body is not a JSON object, so it cannot be "
                                 "served again")
        calls.append(RecordedCall(index=len(calls) + 1, line=number, status=status, body=body,
                                  n_messages=_messages(request.get("body")), provider=metadata.get("provider"),
                                  request_model=metadata.get("request_model")))
    if not calls:
        raise RecordingError(f"{path}: no model call recorded, so there is nothing to replay")
    return calls


@dataclass(frozen=True)
class Divergence:
    """A call that left the recording's rails: the agent sent another number of messages."""

    call: int
    line: int
    sent_messages: int | None
    recorded_messages: int | None
    kind: str | None = CHAT

    def describe(self) -> str:
        if self.kind != CHAT:
            return (f"replay diverged at recorded call {self.call} (llm_trajectory.jsonl line {self.line}): the agent "
                    f"made a {self.kind} call where the recording has a chat completion")
        return (f"replay diverged at recorded call {self.call} (llm_trajectory.jsonl line {self.line}): the agent "
                f"sent {self.sent_messages} messages, the recording {self.recorded_messages}")

    def document(self) -> dict[str, Any]:
        return {"call": self.call, "line": self.line, "sent_messages": self.sent_messages,
                "recorded_messages": self.recorded_messages}


@dataclass(frozen=True)
class Answer:
    """What the gateway sends back for one replayed call."""

    status: int
    body: Any
    call: RecordedCall | None = None
    """The recorded call served; None for the gateway's own refusal (cut point, strict divergence)."""
    divergence: Divergence | None = None
    hold_sec: float = 0.0
    """Seconds at most to hold a refusal before sending it (until the route is unregistered): the engine
    stops the agent meanwhile (it polls the route's stop reason), so the agent is stopped while it waits
    for its model, never handed an error."""

    def response(self, request_body: Any) -> Response:
        """The HTTP response: JSON, or the recorded completion as SSE when the agent asked to stream."""
        streamed = isinstance(request_body, dict) and request_body.get("stream") is True
        if streamed and self.status < 400 and isinstance(self.body, dict) and self.body.get("choices"):
            usage = bool((request_body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(iter(chat_events(self.body, include_usage=usage)),
                                     media_type="text/event-stream")
        if isinstance(self.body, (dict, list)):
            return JSONResponse(self.body, status_code=self.status)
        return Response("" if self.body is None else str(self.body), status_code=self.status)


def _refusal(status: int, message: str, error_type: str, hold_sec: float) -> Answer:
    return Answer(status, {"error": {"message": f"BenchFlow replay: {message}", "type": error_type,
                                     "code": error_type}}, hold_sec=hold_sec)


@dataclass
class Replay:
    """A recording served in order to one route; thread-safe (the gateway's loop answers, the engine's
    watchdog reads :attr:`stop_reason`).

    ``live``: past the recording, calls go to the provider (None from :meth:`answer`); else they are
    refused and the agent is asked to stop at the cut point. ``strict``: the first divergence is refused
    and stops the agent (:attr:`fatal` says why). Refusals are held ``hold_sec`` before they are sent.
    """

    calls: list[RecordedCall]
    live: bool
    strict: bool = False
    hold_sec: float = 30.0
    n_replayed: int = 0
    n_live: int = 0
    cut_point_reached: bool = False
    divergences: list[Divergence] = field(default_factory=list)
    fatal: str | None = None
    """Why the replay stopped the agent before its end (a strict divergence), or None."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _released: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def released(self) -> bool:
        """The route is gone (its trial's agent has stopped): a held refusal is sent at once."""
        return self._released.is_set()

    def release(self) -> None:
        """Called when the route is unregistered."""
        self._released.set()

    @property
    def stop_reason(self) -> str | None:
        """:data:`DIVERGED` or :data:`CUT_POINT` once the agent must stop, else None."""
        with self._lock:
            if self.fatal:
                return DIVERGED
            return CUT_POINT if self.cut_point_reached and not self.live else None

    @property
    def replayed_tokens(self) -> int:
        """Tokens the served recorded calls had used when they were made (this run spent none)."""
        with self._lock:
            return sum(call.tokens for call in self.calls[:self.n_replayed])

    def answer(self, kind: str | None, body: Any) -> Answer | None:
        """The answer to the agent's next model call, or None to send it to the live provider."""
        with self._lock:
            if self.fatal:
                return _refusal(409, self.fatal, DIVERGED, self.hold_sec)
            if self.n_replayed < len(self.calls):
                call = self.calls[self.n_replayed]
                self.n_replayed += 1
                sent = _messages(body)
                divergence = None
                if kind != CHAT or (sent is not None and call.n_messages is not None and sent != call.n_messages):
                    divergence = Divergence(call.index, call.line, sent, call.n_messages, kind)
                    self.divergences.append(divergence)
                    if self.strict or kind != CHAT:  # another API's call cannot get a chat completion
                        self.fatal = divergence.describe()
                        return _refusal(409, self.fatal, DIVERGED, self.hold_sec)
                return Answer(call.status, call.body, call, divergence)
            self.cut_point_reached = True
            if self.live:
                self.n_live += 1
                return None
            return _refusal(503, "the recording ends here and this run has no live model (--replay-only)",
                            CUT_POINT, self.hold_sec)

    def document(self) -> dict[str, Any]:
        """The replay's part of ``result.json``'s ``continued`` block."""
        with self._lock:
            return {"recorded_calls": len(self.calls), "replayed_calls": self.n_replayed, "live_calls": self.n_live,
                    "cut_point_reached": self.cut_point_reached,
                    "divergences": [d.document() for d in self.divergences]}


def chat_events(body: dict[str, Any], *, include_usage: bool) -> list[bytes]:
    """A complete ``chat.completion`` as the SSE events of a streamed one (what an OpenAI client
    reassembles into the same message): per choice its role and text, its tool calls, its finish
    reason; the usage chunk when the client asked for it; ``[DONE]``."""
    head = {"id": body.get("id") or "chatcmpl-replay", "object": "chat.completion.chunk",
            "created": body.get("created") or 0, "model": body.get("model") or ""}
    events: list[dict[str, Any]] = []
    for choice in body.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        index = choice.get("index", 0)
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        delta: dict[str, Any] = {"role": message.get("role") or "assistant"}
        for key in ("content", "reasoning_content", "refusal"):
            if message.get(key) is not None:
                delta[key] = message[key]
        events.append({**head, "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
        calls = [{"index": i, "id": c.get("id"), "type": c.get("type") or "function",
                  "function": {"name": (c.get("function") or {}).get("name") or "",
                               "arguments": (c.get("function") or {}).get("arguments") or ""}}
                 for i, c in enumerate(message.get("tool_calls") or []) if isinstance(c, dict)]
        if calls:
            events.append({**head, "choices": [{"index": index, "delta": {"tool_calls": calls},
                                                "finish_reason": None}]})
        events.append({**head, "choices": [{"index": index, "delta": {},
                                            "finish_reason": choice.get("finish_reason") or "stop"}]})
    if include_usage and isinstance(body.get("usage"), dict):
        events.append({**head, "choices": [], "usage": body["usage"]})
    frames = [b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n" for event in events]
    return [*frames, b"data: [DONE]\n\n"]
