"""SDK glue: the client side of ACP for one agent process in a sandbox.

:class:`ProcessTransport` turns the sandbox :class:`~benchflow.sandbox.base.Process`
(whatever its streams are) into the SDK's message transport, so
``acp.connect_to_agent`` drives agents over ``exec_stream``. :class:`BenchClient`
answers what the agent asks: ``session/update`` becomes trajectory events,
``session/request_permission`` is answered by policy, and ``fs/*`` /
``terminal/*`` are refused (the client advertises neither capability).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from acp import RequestError
from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse

from benchflow.sandbox.base import Process

from .trajectory import TrajectoryMerger
from .watchdog import Activity

log = logging.getLogger(__name__)


class ProcessTransport:
    """Newline-delimited JSON-RPC over a sandbox process's stdin/stdout (``acp`` Transport)."""

    def __init__(self, process: Process) -> None:
        self._process = process
        self._write_lock = asyncio.Lock()
        self._closed = False
        self.eof = False
        """True once the agent closed its stdout."""

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("transport closed")
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        async with self._write_lock:
            try:
                self._process.stdin.write(data)
                await self._process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError, OSError) as exc:
                raise ConnectionError(f"broken pipe writing to the agent: {exc}") from exc

    async def receive(self) -> dict[str, Any] | None:
        """The agent's next message, handed over only once the handler of the one before it has started.

        The SDK runs each notification's handler as a task, and ``session/prompt`` waits only
        for the handlers that have started. When a turn's last ``session/update`` and the
        prompt's answer arrive in one read while the prompt is still in ``send`` (stdin goes
        out from a worker thread), the answer is matched before the prompt awaits it: the
        prompt returns without yielding, before the update's handler ran, and the turn's
        reply reads empty. This yield lets that handler start first.
        """
        await asyncio.sleep(0)
        while True:
            line = await self._process.stdout.readline()
            if not line:
                self.eof = True
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                log.debug("agent wrote a non-JSON line on stdout: %.200r", line)
                continue
            if isinstance(message, dict):
                return message

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._process.stdin.close()
        except Exception:  # noqa: BLE001 - the process may already be gone
            pass


def choose_permission(options: list[PermissionOption]) -> str:
    """The option a headless run picks: bypass, else first allow_always, else last allow_once, else first."""
    ids = [o.option_id for o in options]
    if "bypassPermissions" in ids:
        return "bypassPermissions"
    always = [o.option_id for o in options if o.kind == "allow_always"]
    if always:
        return always[0]
    once = [o.option_id for o in options if o.kind == "allow_once"]
    if once:
        return once[-1]
    return ids[0] if ids else "default"


def _text_of(content: Any) -> str:
    text = getattr(content, "text", None)
    if isinstance(text, str):
        return text
    kind = getattr(content, "type", "content")
    return f"[{kind}]"


def _dump(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_dump(v) for v in value]
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", by_alias=True, exclude_none=True) if dump else value


class BenchClient:
    """The ACP client callbacks for one run (see module docstring)."""

    def __init__(self, emit: Callable[[Mapping[str, Any]], None], activity: Activity) -> None:
        self._emit = emit
        self.activity = activity
        self.merger = TrajectoryMerger()
        self.usage: dict[str, Any] = {}
        self.replaying = False
        """True while ``session/load`` replays an earlier conversation: those updates are not recorded."""
        activity.pending_tool_call_ids = self.merger.pending_tool_call_ids

    def record(self, event: Mapping[str, Any]) -> None:
        """One trajectory event: counted, merged for the outcome, streamed to the sink."""
        self.merger.add(event)
        act = self.activity
        act.n_tool_calls = self.merger.n_tool_calls
        act.n_message_chunks = self.merger.n_message_chunks
        act.n_thought_chunks = self.merger.n_thought_chunks
        if event.get("type") in ("tool_call", "tool_call_update", "agent_message", "agent_thought"):
            act.touch()
        self._emit(event)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.replaying:
            self.activity.touch()
            return
        kind = getattr(update, "session_update", None)
        if kind == "agent_message_chunk":
            self.record({"type": "agent_message", "text": _text_of(update.content)})
        elif kind == "agent_thought_chunk":
            self.record({"type": "agent_thought", "text": _text_of(update.content)})
        elif kind in ("tool_call", "tool_call_update"):
            event: dict[str, Any] = {"type": kind, "tool_call_id": update.tool_call_id}
            for key in ("title", "kind", "status", "content", "locations", "raw_input", "raw_output"):
                value = _dump(getattr(update, key, None))
                if value is not None:
                    event[key] = value
            self.record(event)
        elif kind == "usage_update":
            self.usage["context"] = _dump(update)

    async def request_permission(self, options: list[PermissionOption], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.activity.touch()
        choice = choose_permission(options)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def _refuse(self, method: str) -> Any:
        raise RequestError.method_not_found(method)

    async def write_text_file(self, **kwargs: Any) -> Any:
        return await self._refuse("fs/write_text_file")

    async def read_text_file(self, **kwargs: Any) -> Any:
        return await self._refuse("fs/read_text_file")

    async def create_terminal(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/create")

    async def terminal_output(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/output")

    async def release_terminal(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/release")

    async def wait_for_terminal_exit(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/wait_for_exit")

    async def kill_terminal(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/kill")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None
