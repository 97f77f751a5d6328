"""Commands in an Apple container: ``container exec`` processes, their timeouts, streams and kills.

Each command is one ``container exec`` client process on this host. Its
environment reaches the container as ``--env KEY`` (the CLI copies the value
from its own environment), so no value is on a command line. Every command
carries a per-exec marker (``BENCHFLOW_EXEC_ID``, which ``setsid`` children
keep): killing the client does not end what it started inside the container,
so a timeout or a stream's ``kill`` runs
:data:`benchflow.sandbox.docker_exec.KILL_TREE` as root with the marker (every
process carrying it is stopped, then killed), and the client then ends with
its command. A user other than root is given by name (the CLI resolves it in
the container's ``/etc/passwd``); root by uid and gid 0, whatever the image's
``USER``.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Mapping

from .cli import executable
from ..base import ExecResult
from ..docker_exec import KILL_TREE
from ..local_exec import LocalProcess, finish, kill, spawn

MARKER = "BENCHFLOW_EXEC_ID"
ROOT_USERS = (None, "root", "0")
DRAIN_AFTER_KILL_SEC = 5.0
KILL_TIMEOUT_SEC = 30.0
_background: set[asyncio.Future] = set()
"""In-container kills of cancelled execs, running on after their caller is gone (a reference kept)."""


def command(sandbox_id: str, cmd: list[str], *, user: str | None = None, cwd: str | None = None,
            env: Mapping[str, str] | None = None, interactive: bool = False, tty: bool = False,
            marker: str | None = None) -> tuple[list[str], dict[str, str]]:
    """(argv of the ``container exec`` client, its environment) for ``cmd`` in ``sandbox_id``; ``tty``: on
    this terminal (``bench sandbox attach``'s shell)."""
    if not cmd:
        raise ValueError("exec needs a command (an argv list)")
    values = dict(env or {})
    if marker is not None:
        values[MARKER] = marker
    for key in values:
        if not key or "=" in key or "\0" in key:
            raise ValueError(f"exec: {key!r} is not an environment variable name")
    args = [executable(), "exec"]
    if interactive:
        args.append("--interactive")
    if tty:
        args.append("--tty")
    args += ["--uid", "0", "--gid", "0"] if user in ROOT_USERS else ["--user", str(user)]
    if cwd:
        args += ["--workdir", cwd]
    for key in values:
        args += ["--env", key]
    return [*args, sandbox_id, *cmd], {**os.environ, **values}


async def kill_marked(sandbox_id: str, marker: str) -> None:
    """Stop, then kill, every process in the container carrying ``marker``. Never raises."""
    argv, env = command(sandbox_id, ["sh", "-c", KILL_TREE, "sh", "", marker])  # no root pid: the marker alone
    try:
        proc = await spawn(argv, stdin=False, env=env)
        try:
            await asyncio.wait_for(proc.communicate(), KILL_TIMEOUT_SEC)
        except BaseException:
            kill(proc)
            raise
    except Exception:  # noqa: BLE001, S110 - the container may be gone; its processes went with it
        pass


async def run(sandbox_id: str, cmd: list[str], *, user: str | None, env: Mapping[str, str] | None,
              cwd: str | None, timeout: float | None, stdin: bytes | None, output_cap: int) -> ExecResult:
    """Run ``cmd`` to its end; a timeout kills its process tree in the container and returns rc 124."""
    marker = secrets.token_hex(8)
    argv, client_env = command(sandbox_id, cmd, user=user, cwd=cwd, env=env, interactive=stdin is not None,
                               marker=marker)
    proc = await spawn(argv, stdin=stdin is not None, env=client_env)
    return await finish(proc, stdin=stdin, timeout=timeout, output_cap=output_cap,
                        end=lambda client: end_marked(client, sandbox_id, marker),
                        abandon=lambda: _kill_in_background(sandbox_id, marker))


async def end_marked(client: asyncio.subprocess.Process, sandbox_id: str, marker: str) -> None:
    """Kill what ``marker`` runs in the container, then let the ``container exec`` client end (else kill it)."""
    await kill_marked(sandbox_id, marker)
    try:
        await asyncio.wait_for(asyncio.shield(client.wait()), DRAIN_AFTER_KILL_SEC)
    except TimeoutError:
        kill(client)
        await client.wait()


def _kill_in_background(sandbox_id: str, marker: str) -> None:
    """Start :func:`kill_marked` for a cancelled exec; it runs on after its caller is gone."""
    cleanup = asyncio.ensure_future(kill_marked(sandbox_id, marker))
    _background.add(cleanup)
    cleanup.add_done_callback(_background.discard)


class AppleProcess(LocalProcess):
    """A long-lived command with open stdio (the ``Process`` protocol of base.py): the client's pipes;
    ``kill`` ends what it started in the container too."""

    def __init__(self, proc: asyncio.subprocess.Process, sandbox_id: str, marker: str) -> None:
        super().__init__(proc)
        self._sandbox_id = sandbox_id
        self._marker = marker

    async def kill(self) -> None:
        await end_marked(self._proc, self._sandbox_id, self._marker)


async def open_process(sandbox_id: str, cmd: list[str], *, user: str | None, env: Mapping[str, str] | None,
                       cwd: str | None) -> AppleProcess:
    """Start ``cmd`` with open stdin/stdout/stderr and return at once."""
    marker = secrets.token_hex(8)
    argv, client_env = command(sandbox_id, cmd, user=user, cwd=cwd, env=env, interactive=True, marker=marker)
    return AppleProcess(await spawn(argv, stdin=True, env=client_env), sandbox_id, marker)
