"""A long-lived process in a Daytona sandbox with open stdio (``exec_stream``, for ACP agents).

The command runs as an asynchronous session command. Its output is read by
polling the command's logs endpoint (``GET …/command/{id}/logs``; the SDK's
follow mode is a websocket) and what is new is fed to the stdout/stderr
readers (stdout decoded from the base64 lines it comes as); it ends when the
command reports an exit code. Writes to stdin go
through the command's input endpoint as base64 lines, and ``close`` sends the
end-of-file line (:mod:`.marked_commands`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from benchflow.errors import InfraError

from .. import marked_commands as cmds
from ..remote_common import QueuedStdin, following

POLL_SEC = 0.05
IDLE_POLL_SEC = 0.5
"""Polls start every 50 ms after output or a write, and slow down to twice a second while idle."""


class DaytonaProcess:
    """See the module docstring (the ``Process`` protocol of base.py)."""

    def __init__(self, sandbox, session: str, command_id: str, marker: str) -> None:
        self._sandbox = sandbox
        self._session = session
        self._command = command_id
        self._marker = marker
        self.stdout = asyncio.StreamReader()
        self.stderr = asyncio.StreamReader()
        self.stdin = QueuedStdin(self._send, items=lambda data: [cmds.relay_chunk(data)] if data else [],
                                 eof=cmds.EOF_LINE.decode())
        self._code: int | None = None
        self._wake = asyncio.Event()
        """Set by each write: an answer is likely, so the next poll comes at once."""
        self._reader = asyncio.ensure_future(self._follow())

    async def _send(self, data: str) -> None:
        await self._sandbox._require().process.send_session_command_input(self._session, self._command, data)
        self._wake.set()

    async def _follow(self) -> None:
        process = self._sandbox._require().process
        seen_out = seen_err = 0
        decoder = cmds.Decoder()
        delay = POLL_SEC
        try:
            async with following(self):
                while True:
                    data_seen = False
                    self._wake.clear()
                    command = await process.get_session_command(self._session, self._command)
                    logs = await process.get_session_command_logs(self._session, self._command)
                    out, err = logs.stdout or "", (logs.stderr or "").encode()
                    if len(out) > seen_out:
                        data = decoder.feed(out[seen_out:])
                        seen_out = len(out)
                        if data:
                            self.stdout.feed_data(data)
                            data_seen = True
                    if len(err) > seen_err:
                        self.stderr.feed_data(err[seen_err:])
                        seen_err = len(err)
                        data_seen = True
                    if command.exit_code is not None:
                        self._code = command.exit_code
                        return
                    delay = POLL_SEC if data_seen else min(delay * 1.5, IDLE_POLL_SEC)
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), delay)
                        delay = POLL_SEC
        finally:
            if not self._sandbox._stopped and self._code is not None:
                await self._sandbox._forget(self._session)

    async def wait(self) -> int:
        await asyncio.shield(self._reader)
        return self._code if self._code is not None else -1

    async def kill(self) -> None:
        await self._sandbox.kill(self._marker)
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), 10)
        except TimeoutError:
            self._reader.cancel()
            self._code = -9


async def open_process(sandbox, words: list[str]) -> DaytonaProcess:
    """Start ``words`` (from :func:`.marked_commands.argv`) and return at once."""
    from daytona import SessionExecuteRequest

    process = sandbox._require().process
    session, marker = f"bf-stream-{secrets.token_hex(6)}", secrets.token_hex(8)
    try:
        await process.create_session(session)
        started = await process.execute_session_command(
            session, SessionExecuteRequest(command=cmds.streaming_line(words, marker), run_async=True))
    except Exception as exc:
        raise InfraError(f"exec_stream in Daytona sandbox {sandbox.sandbox_id}: {exc}") from exc
    return DaytonaProcess(sandbox, session, started.cmd_id, marker)
