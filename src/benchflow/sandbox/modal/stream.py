"""A long-lived process in a Modal sandbox with open stdio (``exec_stream``, for ACP agents).

Modal's exec has real stdio: stdout and stderr stream back as bytes (read by
one task each into asyncio stream readers), and stdin takes writes at offsets
with an explicit end. ``write``/``close`` are not coroutines in the ``Process``
protocol, so writes are queued and sent in order by one task; ``drain`` waits
until everything written so far was sent. ``kill`` stops the command's whole
process tree by its exec marker (:meth:`.modal.sandbox.ModalSandbox.kill`).
"""

from __future__ import annotations

import asyncio
import contextlib

KILL_WAIT_SEC = 10


class _Stdin:
    """Writes queued in order and sent by one task; ``None`` in the queue is end-of-file."""

    def __init__(self, writer) -> None:
        self._writer = writer
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._closed = False
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                if item is None:
                    self._writer.write_eof()
                else:
                    self._writer.write(item)
                await self._writer.drain.aio()
            except Exception:  # noqa: BLE001, S110 - the process ended; what it was sent is moot
                pass
            finally:
                self._queue.task_done()
            if item is None:
                return

    def write(self, data: bytes) -> None:
        if self._closed:
            raise BrokenPipeError("stdin is closed")
        if data:
            self._queue.put_nowait(bytes(data))

    async def drain(self) -> None:
        await self._queue.join()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(None)

    def abandon(self) -> None:
        self._task.cancel()


class ModalProcess:
    """See the module docstring (the ``Process`` protocol of base.py)."""

    def __init__(self, sandbox, process, marker: str) -> None:
        self._sandbox = sandbox
        self._process = process
        self._marker = marker
        self.stdin = _Stdin(process.stdin)
        self.stdout = asyncio.StreamReader()
        self.stderr = asyncio.StreamReader()
        self._pumps = [asyncio.ensure_future(_pump(process.stdout, self.stdout)),
                       asyncio.ensure_future(_pump(process.stderr, self.stderr))]
        self._waiter = asyncio.ensure_future(self._wait())

    async def _wait(self) -> int:
        try:
            await asyncio.gather(*self._pumps, return_exceptions=True)
            return await self._process.wait.aio()
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the sandbox went away: the process is over
            return -1
        finally:
            self.stdin.abandon()

    async def wait(self) -> int:
        return await asyncio.shield(self._waiter)

    async def kill(self) -> None:
        await self._sandbox.kill(self._marker)
        try:
            await asyncio.wait_for(asyncio.shield(self._waiter), KILL_WAIT_SEC)
        except TimeoutError:
            for task in (*self._pumps, self._waiter):
                task.cancel()


async def _pump(source, target: asyncio.StreamReader) -> None:
    try:
        async for chunk in source:
            target.feed_data(chunk)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001, S110 - the stream broke: what came is what there is
        pass
    finally:
        with contextlib.suppress(Exception):
            target.feed_eof()
