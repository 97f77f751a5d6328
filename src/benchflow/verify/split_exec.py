"""One exec in two parts, each under its own deadline: a first part that ends by printing a line only
the caller knows, then a second part the same shell ``exec``\\ s (the verifier fence, then the verifier:
:func:`.fence.fence_then_run`).

``Sandbox.exec``'s timeout covers a whole exec, so a verifier run there would share its budget with
the fence before it: a hanging verifier would run for its timeout plus whatever the fence was allowed.
Here the command is started with ``exec_stream`` (the same single exec round trip), the host reads its
stdout as it comes, and the second part's deadline is armed the moment the line arrives. Running out
of either deadline ends the exec as ``Sandbox.exec`` ends one: the process tree is killed (the
``Process.kill`` of the backend), return code 124, ``timed_out``, the same note on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass

from benchflow.errors import BenchError, InfraError
from benchflow.sandbox.base import (
    DEFAULT_OUTPUT_CAP_BYTES,
    CappedOutput,
    ExecResult,
    Sandbox,
)

TIMEOUT_RC = 124
KILL_DRAIN_SEC = 10.0
"""How long the output may take to end once the process tree was killed (then it is dropped)."""
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Split:
    """What a :func:`run_split` exec returned."""

    head: str
    """Stdout before the line (the first part's own output)."""
    reached: bool
    """The line was printed: the second part started (its deadline was armed)."""
    result: ExecResult
    """Stdout after the line, all of stderr, the exec's return code; ``timed_out`` when either part
    ran out of its time."""
    trailer: bytes | None = None
    """With ``trailer``: the raw stdout after that line (the second part's own output is then what
    came before it), when the line came and nothing after it was cut; else None."""


class _Stdout:
    """Splits stdout at the first line equal to ``line``: before it into ``head``, after it into ``tail``."""

    def __init__(self, line: bytes, cap: int) -> None:
        self.line, self.head, self.tail = line, CappedOutput(cap), CappedOutput(cap)
        self.reached = asyncio.Event()
        self._pending = b""

    def feed(self, chunk: bytes) -> None:
        if self.reached.is_set():
            self.tail.add(chunk)
            return
        self._pending += chunk
        while not self.reached.is_set():
            first, newline, rest = self._pending.partition(b"\n")
            if not newline:
                return
            self._pending = b""
            if first == self.line:
                self.reached.set()
                self.tail.add(rest)
                return
            self.head.add(first + newline)
            self._pending = rest

    def end(self) -> None:
        if not self.reached.is_set():
            self.head.add(self._pending)


async def run_split(sandbox: Sandbox, cmd: list[str], *, line: str, first_timeout: float, timeout: float,
                    stdin: bytes | None = None, env: Mapping[str, str] | None = None, cwd: str | None = None,
                    output_cap: int = DEFAULT_OUTPUT_CAP_BYTES, trailer: str | None = None,
                    trailer_cap: int = 0) -> Split:
    """Run ``cmd`` as root; it has ``first_timeout`` seconds to print ``line`` (a line of its stdout),
    and from the moment the host reads that line, ``timeout`` seconds to finish. With ``trailer``, what
    follows the first ``\n<trailer>\n`` of the second part's stdout is :attr:`Split.trailer` (up to
    ``trailer_cap`` bytes of it), not output.

    Raises:
        InfraError: the sandbox is gone or the transport broke.
    """
    process = await sandbox.exec_stream(cmd, env=env, cwd=cwd)
    out, err = _Stdout(line.encode(), output_cap + (trailer_cap if trailer else 0)), CappedOutput(output_cap)

    async def pump(reader, sink) -> None:
        while chunk := await reader.read(_CHUNK):
            sink(chunk)

    async def finish() -> int:
        await asyncio.gather(pump(process.stdout, out.feed), pump(process.stderr, err.add))
        out.end()
        return await process.wait()

    feeding = asyncio.ensure_future(_feed(process.stdin, stdin))
    done = asyncio.ensure_future(finish())
    reached = asyncio.ensure_future(out.reached.wait())
    limit: float | None = None
    try:
        await asyncio.wait({done, reached}, timeout=first_timeout, return_when=asyncio.FIRST_COMPLETED)
        if not done.done():
            if not out.reached.is_set():
                limit = first_timeout
            else:
                await asyncio.wait({done}, timeout=timeout)
                limit = None if done.done() else timeout
        if limit is not None:
            await process.kill()
            await asyncio.wait({done}, timeout=KILL_DRAIN_SEC)
    except BaseException:  # cancelled (or the transport broke): nothing of it may keep running
        await asyncio.shield(_kill(process))
        raise
    finally:
        for task in (reached, feeding, done):
            if not task.done():
                task.cancel()
        await asyncio.gather(reached, feeding, done, return_exceptions=True)
    stderr = err.text()
    if limit is not None:
        stderr += f"\n[timed out after {limit:g}s; the process tree was killed]\n"
        code = TIMEOUT_RC
    else:
        try:
            code = done.result()
        except BenchError:
            raise
        except Exception as exc:  # the transport broke mid-exec: as Sandbox.exec says
            raise InfraError(f"exec in {sandbox.sandbox_id}: {exc}") from exc
    tail, after = out.tail, None
    if trailer:
        tail, after = cut_at(out.tail, trailer.encode(), output_cap)
        if after is not None and len(after) > trailer_cap:
            after = None
    result = ExecResult(return_code=code, stdout=tail.text(), stderr=stderr, timed_out=limit is not None,
                        truncated=bool(out.head.dropped or tail.dropped or err.dropped))
    return Split(head=out.head.text(), reached=out.reached.is_set(), result=result, trailer=after)


def cut_at(output: CappedOutput, line: bytes, cap: int) -> tuple[CappedOutput, bytes | None]:
    """(what ``output`` holds before its first ``\n<line>\n``, kept to ``cap`` bytes; the bytes after it,
    or None when the line is not there or ``output`` was cut, so they may be incomplete)."""
    marker = b"\n" + line + b"\n"
    at = output.data.find(marker)
    before = CappedOutput(cap)
    before.add(bytes(output.data if at < 0 else output.data[:at]))
    before.dropped += output.dropped if at < 0 else 0
    if at < 0 or output.dropped:
        return before, None
    return before, bytes(output.data[at + len(marker):])


async def _feed(writer, data: bytes | None) -> None:
    """Send ``data`` on stdin, then end it; a process that stopped reading is no error."""
    try:
        if data:
            writer.write(data)
            await writer.drain()
    except (OSError, RuntimeError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()


async def _kill(process) -> None:
    with contextlib.suppress(Exception):
        await process.kill()
