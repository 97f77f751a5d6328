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

from ..remote_common import QueuedStdin

KILL_WAIT_SEC = 10
_EOF = object()
"""What closing stdin queues: the exec's stdin gets its end of file."""


def _sender(writer):
    """Send a queued write (bytes) or :data:`_EOF` to a Modal exec's stdin."""

    async def send(item) -> None:
        if item is _EOF:
            writer.write_eof()
        else:
            writer.write(item)
        await writer.drain.aio()

    return send


class ModalProcess:
    """See the module docstring (the ``Process`` protocol of base.py)."""

    def __init__(self, sandbox, process, marker: str) -> None:
        self._sandbox = sandbox
        self._process = process
        self._marker = marker
        self.stdin = QueuedStdin(_sender(process.stdin), eof=_EOF)
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
