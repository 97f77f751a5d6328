"""What the remote sandbox backends (Daytona, Modal, AgentCore; some of it Apple's container VM too) share.

Each backend package talks to its own SDK; this module is the logic that is the
same whatever the SDK, so it is written once:

- **owner labels**: the labels a sandbox of ours carries, the ones a listing
  asks for, and its row in ``bench sandbox list`` (:func:`owner_labels`,
  :func:`wanted_labels`, :func:`carries`, :func:`owned_row`);
- **an exec**: its stdin as a file (:func:`stdin_file`); its result, exit code
  124 with a note on a timeout, output capped (:func:`exec_result`, :func:`capped_result`);
- **files as one tar**: ``put`` unpacks an uploaded tar at ``/`` and deletes it
  (:func:`put_by_upload`); ``get`` tars the path, or exits :data:`GONE_RC`
  when it is not there (:func:`tar_of`, :func:`gone`, :func:`file_chunks`);
- **a streamed process**: its stdin's writes queued in order and sent by one
  task (:class:`QueuedStdin`); the end of the task that follows its output
  (:func:`following`);
- **an SDK error in a message**: its first line (:func:`first_line`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import IO, Any

from benchflow.errors import InfraError

from . import docker_engine as eng
from .base import ExecResult, OwnedSandbox, SandboxSpec
from .marked_commands import capped

TIMEOUT_RC = 124
"""The exit code of a command that ran out of time (as ``timeout(1)``)."""
DRAIN_AFTER_KILL_SEC = 5.0
"""How long a timed-out command's output is still read after its process tree was killed."""
GONE_RC = 44
"""The exit code of :func:`tar_of` when the path is not there."""
CHUNK = 1 << 20


def first_line(exc: BaseException) -> str:
    """An SDK error in a message: its first line (at most 300 characters), or its type's name."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


# owner labels


def owner_labels(spec: SandboxSpec, backend: str) -> dict[str, str]:
    """The labels (tags) a sandbox of ``spec`` made by ``backend`` carries: its owner's and the backend's name."""
    return eng.owner_labels(dict(spec.labels)) | {eng.BACKEND: backend}


def wanted_labels(backend: str, owner: str | None = None) -> dict[str, str]:
    """The labels that mark the sandboxes ``backend`` made (of job ``owner`` only, when given)."""
    return {eng.OWNED: "true", eng.BACKEND: backend} | ({eng.JOB: owner} if owner else {})


def carries(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """True when ``labels`` hold every one of ``wanted`` with its value."""
    return all(labels.get(k) == v for k, v in wanted.items())


def owned_row(labels: Mapping[str, str], *, alive: bool | None, **fields: Any) -> OwnedSandbox:
    """The ``bench sandbox list`` row of a sandbox with owner ``labels``: its job, trial, task and owner
    come from them (``alive``: whether the owning process runs), the rest is ``fields``."""
    pid = labels.get(eng.PID)
    who = (f"live pid {pid}" if alive else f"gone (pid {pid})" if alive is False
           else f"other host {labels.get(eng.HOST, '?')}" if pid else "none")
    return OwnedSandbox(**fields, job=labels.get(eng.JOB), trial=labels.get(eng.TRIAL), task=labels.get(eng.TASK),
                        owner=who, owner_alive=alive)


# an exec's result


def exec_result(code: int | None, stdout: str, stderr: str, *, truncated: bool,
                timeout: float | None) -> ExecResult:
    """The result of a command that exited with ``code``, or (``code`` None) ran out of ``timeout``:
    then exit code :data:`TIMEOUT_RC`, ``timed_out`` and a note at the end of stderr."""
    if code is None:
        stderr += f"\n[timed out after {timeout:g}s; the process tree was killed]\n"
        return ExecResult(TIMEOUT_RC, stdout, stderr, timed_out=True, truncated=truncated)
    return ExecResult(code, stdout, stderr, truncated=truncated)


def capped_result(code: int | None, out: str, err: str, *, cap: int, timeout: float | None) -> ExecResult:
    """:func:`exec_result` of output that came whole, each stream cut at ``cap`` bytes."""
    stdout, cut_out = capped(out, cap)
    stderr, cut_err = capped(err, cap)
    return exec_result(code, stdout, stderr, truncated=cut_out or cut_err, timeout=timeout)


async def stdin_file(stdin: bytes | None, marker: str, upload: Callable[[bytes, str], Awaitable[None]]) -> str | None:
    """The file a command of exec ``marker`` reads its ``stdin`` from, sent with ``upload(data, path)``
    (None without stdin: the command reads ``/dev/null``)."""
    if stdin is None:
        return None
    path = f"/tmp/.bf-stdin-{marker}"
    await upload(stdin, path)
    return path


# files as one tar


async def put_by_upload(sandbox, local: Path, remote: str, upload: Callable[[str], Awaitable[None]]) -> None:
    """``put`` through a file: ``upload(path)`` sends the tar of ``local`` (named ``remote``) to ``path``
    in ``sandbox``, which unpacks it at ``/`` and deletes it."""
    path = f"/tmp/.bf-put-{secrets.token_hex(8)}.tar"
    await upload(path)
    result = await sandbox.exec(["sh", "-c", 'tar -xpf "$1" -C / && rm -f "$1"', "sh", path], cwd="/")
    if not result.success:
        raise InfraError(f"put {local} -> {remote}: {result.stderr.strip()[-300:]}")


def tar_of(remote: PurePosixPath, tar: str = 'exec tar -cf - -C "$2" "$3"', *extra: str) -> list[str]:
    """A command that exits :data:`GONE_RC` when ``remote`` is not there (not even as a link), else runs
    the shell line ``tar`` with ``$1`` the path, ``$2`` its folder, ``$3`` its name and ``extra`` after."""
    return ["sh", "-c", f'test -e "$1" || test -L "$1" || exit {GONE_RC}; {tar}', "sh", str(remote),
            str(remote.parent), remote.name, *extra]


def gone(remote: str | PurePosixPath) -> FileNotFoundError:
    """What ``get`` raises when :func:`tar_of` exited :data:`GONE_RC`."""
    return FileNotFoundError(f"get: {remote} does not exist in the sandbox")


def chunks_of(handle: IO[bytes]) -> Iterator[bytes]:
    """The rest of the open file ``handle``, in chunks of :data:`CHUNK` bytes."""
    while chunk := handle.read(CHUNK):
        yield chunk


def file_chunks(path: Path) -> Iterator[bytes]:
    """The file ``path``, in chunks of :data:`CHUNK` bytes (opened when the first is asked for)."""
    with path.open("rb") as handle:
        yield from chunks_of(handle)


# a streamed process's stdin

_END = object()


class QueuedStdin:
    """The stdin of a process streamed from a remote sandbox (the ``Process`` protocol of base.py).

    ``write``/``close`` are not coroutines there, so what they are given becomes items queued in order
    and sent by one task: ``items(data)`` for a write (the items of an empty write: none), ``eof`` for
    the close. ``drain`` waits until everything queued so far was sent. A send that fails is dropped:
    the process ended, and what it was sent is moot.
    """

    def __init__(self, send: Callable[[Any], Awaitable[None]], *, eof: Any,
                 items: Callable[[bytes], Iterable[Any]] = lambda data: [bytes(data)] if data else []) -> None:
        self._send = send
        self._items = items
        self._eof = eof
        self._queue: asyncio.Queue = asyncio.Queue()
        self._closed = False
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while (item := await self._queue.get()) is not _END:
            try:
                await self._send(item)
            except Exception:  # noqa: BLE001, S110 - the process ended; what it was sent is moot
                pass
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def write(self, data: bytes) -> None:
        if self._closed:
            raise BrokenPipeError("stdin is closed")
        for item in self._items(data):
            self._queue.put_nowait(item)

    async def drain(self) -> None:
        await self._queue.join()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(self._eof)
            self._queue.put_nowait(_END)

    def abandon(self) -> None:
        """Stop sending (the process is over)."""
        self._task.cancel()


@contextlib.asynccontextmanager
async def following(process):
    """Around the task that follows the output of a streamed ``process`` (with ``stdout`` and ``stderr``
    stream readers, a :class:`QueuedStdin` and ``_code``): an error means the sandbox went away, so the
    process is over with exit code -1; however it ends, both readers get end of file and stdin stops."""
    try:
        yield
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - the sandbox went away: the process is over
        process._code = -1
    finally:
        process.stdout.feed_eof()
        process.stderr.feed_eof()
        process.stdin.abandon()
