"""A long-lived process in an AgentCore sandbox with open stdio (``exec_stream``, for ACP agents),
built from one-shot commands because ``InvokeAgentRuntimeCommand`` has no stdin.

- **start**: one command makes a folder ``/tmp/.bf-proc-<marker>`` with a FIFO
  ``in``, starts a holder that keeps the FIFO open for writing (so the process
  sees no end of file between writes) and starts the process in the background
  (``setsid``, the exec marker in its environment) with stdin from the FIFO,
  stdout and stderr to the files ``out`` and ``err``, and its exit status to
  ``rc`` when it ends;
- **stdin**: each write is one command, ``printf %s <base64> | base64 -d >> in``
  (chunks of :data:`.agentcore.commands.CHUNK_BYTES`, in order); ``close`` tells
  the holder to let go (``touch closed``), so the process reads end of file;
- **stdout/stderr**: one long-running command follows both files from byte
  offsets (a ``python3`` loop printing base64 lines, since a command's output is
  text) and ends with the exit status when ``rc`` appears; it stops itself
  before AgentCore's longest command (3,600 s) and is restarted from the offsets
  read so far, so a process may run for as long as the session lives;
- **kill**: the exec marker's whole tree is stopped, then killed.

Every write costs a round trip to AWS (tens of milliseconds), and output comes
within the follower's 20 ms poll. The image needs ``python3`` (AgentCore's
health contract needs it too: :mod:`.agentcore.image`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import shlex

from benchflow.errors import InfraError

from . import commands as ac
from .. import marked_commands as cmds
from ..remote_common import QueuedStdin, following

FOLLOW_SEC = 3300
"""A follower stops itself after this long (under AgentCore's 3,600 s) and is started again."""
KILLED_RC = 137
FOLLOW = """
import base64, os, sys, time
folder, limit = sys.argv[1], float(sys.argv[4])
handles = []
for name, offset in (("out", sys.argv[2]), ("err", sys.argv[3])):
    handle = open(os.path.join(folder, name), "rb")
    handle.seek(int(offset))
    handles.append((name[0], handle))
began = time.monotonic()
while True:
    ended = os.path.exists(os.path.join(folder, "rc"))
    read = False
    for tag, handle in handles:
        data = handle.read(49152)
        if data:
            read = True
            sys.stdout.write(tag + base64.b64encode(data).decode() + "\\n")
    sys.stdout.flush()
    if read:
        continue
    if ended:
        print("x" + open(os.path.join(folder, "rc")).read().strip(), flush=True)
        break
    if time.monotonic() - began > limit:
        print("r", flush=True)
        break
    time.sleep(0.02)
"""


def start_line(words: list[str], marker: str, folder: str) -> str:
    """The command that starts ``words`` in the background (see the module docstring)."""
    q = shlex.quote
    run = (f"{shlex.join(words)} < {q(folder + '/in')} > {q(folder + '/out')} 2> {q(folder + '/err')}; "
           f"echo $? > {q(folder + '/rc.t')}; mv {q(folder + '/rc.t')} {q(folder + '/rc')}")
    hold = f"exec 3<>{q(folder + '/in')}; while [ ! -e {q(folder + '/closed')} ]; do sleep 0.2; done"
    return (f"mkdir -p {q(folder)} && mkfifo {q(folder + '/in')} && : > {q(folder + '/out')} && "
            f": > {q(folder + '/err')} && export {cmds.MARKER}={marker} && "
            f"(setsid sh -c {q(hold)} < /dev/null > /dev/null 2>&1 &) && "
            f"(setsid sh -c {q(run)} < /dev/null > /dev/null 2>&1 &)")


def write_lines(data: bytes, folder: str) -> list[str]:
    """The commands that append ``data`` to the FIFO in ``folder``, a chunk each."""
    fifo = shlex.quote(folder + "/in")
    return [f"printf %s {base64.b64encode(data[start:start + ac.CHUNK_BYTES]).decode('ascii')} | base64 -d >> {fifo}"
            for start in range(0, len(data), ac.CHUNK_BYTES)]


class AgentCoreProcess:
    """See the module docstring (the ``Process`` protocol of base.py)."""

    def __init__(self, sandbox, marker: str, folder: str) -> None:
        self._sandbox = sandbox
        self._marker = marker
        self._folder = folder
        self.stdout = asyncio.StreamReader()
        self.stderr = asyncio.StreamReader()
        self.stdin = QueuedStdin(lambda line: ac.run_line(sandbox, line, timeout=60),
                                 items=lambda data: write_lines(data, folder),
                                 eof=f"touch {shlex.quote(folder + '/closed')}")
        self._code: int | None = None
        self._offsets = {"o": 0, "e": 0}
        self._reader = asyncio.ensure_future(self._follow())

    def _line(self, text: str) -> None:
        tag, rest = text[:1], text[1:]
        if tag in self._offsets:
            data = base64.b64decode(rest)
            self._offsets[tag] += len(data)
            (self.stdout if tag == "o" else self.stderr).feed_data(data)
        elif tag == "x":
            self._code = int(rest or -1)

    async def _follow(self) -> None:
        try:
            async with following(self):
                while self._code is None:
                    pending = [""]

                    def feed(stream: str, text: str, pending=pending) -> None:
                        if stream != "stdout":
                            return
                        lines = (pending[0] + text).split("\n")
                        pending[0] = lines.pop()
                        for line in lines:
                            self._line(line)

                    words = ["python3", "-c", FOLLOW, self._folder, str(self._offsets["o"]),
                             str(self._offsets["e"]), str(FOLLOW_SEC)]
                    await ac.Command(self._sandbox, shlex.join(words) + " < /dev/null", timeout=FOLLOW_SEC + 60,
                                     on_output=feed).run()
                    await asyncio.sleep(0)
        finally:
            if not self._sandbox._stopped:
                with contextlib.suppress(Exception):
                    await ac.run_line(self._sandbox, f"rm -rf {shlex.quote(self._folder)}", timeout=60)

    async def wait(self) -> int:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self._reader)
        if not self._reader.done():  # the caller was cancelled, not the reader
            raise asyncio.CancelledError
        return self._code if self._code is not None else -1

    async def kill(self) -> None:
        await self._sandbox.kill(self._marker)
        self._code = KILLED_RC
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


async def open_process(sandbox, words: list[str]) -> AgentCoreProcess:
    """Start ``words`` (from :func:`.marked_commands.argv`) and return at once."""
    marker = secrets.token_hex(8)
    folder = f"/tmp/.bf-proc-{marker}"
    code, _, err = await ac.run_line(sandbox, start_line(words, marker, folder), timeout=60)
    if code != 0:
        raise InfraError(f"exec_stream in AgentCore runtime {sandbox.sandbox_id}: {err.strip()[-300:]}")
    return AgentCoreProcess(sandbox, marker, folder)
