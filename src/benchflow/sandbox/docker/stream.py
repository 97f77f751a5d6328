"""A long-lived process in a container with open stdin/stdout/stderr (for ACP agents).

The exec's hijacked socket is pumped by one worker thread that demultiplexes
the engine's frames into two :class:`asyncio.StreamReader` objects on the
caller's loop; writes go out through the same pool, in order. ``close()`` on
stdin half-closes the socket, so the process sees end-of-file.
"""

from __future__ import annotations

import asyncio
import secrets

from .. import docker_exec as dx
from ..docker_engine import POOL, call
from ..engine_stream import EngineStream

READ_LIMIT = 64 << 20
"""Longest line ``readline`` accepts: ACP messages can carry whole files."""


class _Writer:
    """The process's stdin: ``write`` queues, ``drain`` waits until all of it is sent.

    One task on the caller's loop sends queued chunks in order from a pool thread.
    """

    _EOF = None

    def __init__(self, conn: EngineStream) -> None:
        self._conn = conn
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._sender: asyncio.Task | None = None
        self._error: BaseException | None = None
        self._closed = False

    def write(self, data: bytes) -> None:
        if self._closed:
            raise BrokenPipeError("stdin is closed")
        if self._error is not None:
            raise BrokenPipeError(f"stdin broke: {self._error}")
        self._queue.put_nowait(bytes(data))
        self._ensure_sender()

    def _ensure_sender(self) -> None:
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._send_all())

    async def _send_all(self) -> None:
        while True:
            data = await self._queue.get()
            try:
                if data is self._EOF:
                    await call(self._conn.close_write)
                    return
                if self._error is None:
                    await call(self._conn.sendall, data)
            except OSError as exc:
                self._error = exc
            finally:
                self._queue.task_done()

    async def drain(self) -> None:
        await self._queue.join()
        if self._error is not None:
            raise BrokenPipeError(f"stdin broke: {self._error}")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(self._EOF)
            self._ensure_sender()


class DockerProcess:
    """See :class:`benchflow.sandbox.base.Process`."""

    def __init__(self, api, container: str, exec_id: str, conn: EngineStream,
                 loop: asyncio.AbstractEventLoop, marker: str) -> None:
        self._api, self._container, self._exec_id, self._conn = api, container, exec_id, conn
        self.marker = marker
        """``BENCHFLOW_EXEC_ID`` of this process: ``kill`` finds its detached children by it."""
        self.stdin = _Writer(conn)
        self.stdout = asyncio.StreamReader(limit=READ_LIMIT, loop=loop)
        self.stderr = asyncio.StreamReader(limit=READ_LIMIT, loop=loop)
        self._header = dx.PidHeader()
        self._pump = loop.run_in_executor(POOL, self._read_all, loop)
        self._code: int | None = None

    @property
    def pid(self) -> int | None:
        """The process id inside the container, once the process has started."""
        return self._header.pid

    def _read_all(self, loop: asyncio.AbstractEventLoop) -> None:
        def hand(fn, *args) -> None:
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the caller's loop is gone; nobody reads any more
                pass

        try:
            for stream, chunk in self._conn.frames():
                if stream == 1:
                    chunk = self._header.feed(chunk)
                    if chunk:
                        hand(self.stdout.feed_data, chunk)
                elif stream == 2:
                    hand(self.stderr.feed_data, chunk)
        except OSError:
            pass
        finally:
            hand(self.stdout.feed_eof)
            hand(self.stderr.feed_eof)

    async def wait(self) -> int:
        """Wait for the process to exit; its exit code."""
        if self._code is None:
            await asyncio.shield(self._pump)
            self._code = await call(dx.exit_code, self._api, self._exec_id)
            self._conn.close()
        return self._code

    async def kill(self) -> None:
        """Kill the process and everything it started; safe to call twice."""
        if self._code is not None:
            return
        await call(dx.kill_tree, self._api, self._container, self._header.pid, self.marker)
        try:
            await asyncio.wait_for(asyncio.shield(self._pump), dx.DRAIN_AFTER_KILL_SEC)
        except asyncio.TimeoutError:
            self._conn.wake()
            self._conn.close()


async def open_process(api, container: str, cmd: list[str], *, user: str | None, env,
                       cwd: str | None) -> DockerProcess:
    if not cmd:
        raise ValueError("exec_stream needs a command (an argv list)")
    marker = secrets.token_hex(8)
    env = {**(env or {}), "BENCHFLOW_EXEC_ID": marker}
    exec_id, conn = await call(dx.start, api, container, cmd, user=user, env=env, cwd=cwd, stdin=True)
    return DockerProcess(api, container, exec_id, conn, asyncio.get_running_loop(), marker)
