"""Running commands in a container over the Engine API's exec endpoints.

Every command runs under a tiny POSIX-sh prelude, ``echo $$; exec "$@"``: the
first line of stdout is the command's pid inside the container (stripped
before the caller sees anything), and the command itself replaces the shell.
An exec'd process is a session leader, so on a timeout a second exec (as
root, POSIX sh and ``/proc`` only: no ``pkill``, no ``ps``) stops and then
kills every process in that session or descending from it, including
background children that outlived their parent.

Output is demultiplexed from the engine's framed stream in a worker thread;
each stream keeps ``output_cap`` bytes and counts the rest, and a note is
appended when something was cut.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Mapping

from benchflow.errors import InfraError

from .base import CappedOutput, ExecResult
from .docker_engine import POOL, call
from .engine_stream import EngineStream, exec_stream

PRELUDE = ["/bin/sh", "-c", 'echo $$; exec "$@"', "sh"]
TIMEOUT_RC = 124
DRAIN_AFTER_KILL_SEC = 5.0

# Stop, then kill, every process whose session is $1, whose parent chain reaches $1, or whose
# environment carries the exec's marker $2 (a `setsid` child re-parented to init still has it).
KILL_TREE = r"""
root=$1; mark="BENCHFLOW_EXEC_ID=$2"; tree=" $root "; pass=0
while [ $pass -lt 2 ]; do
  grown=1
  while [ $grown = 1 ]; do
    grown=0
    for stat in /proc/[0-9]*/stat; do
      line=; read -r line 2>/dev/null <"$stat"
      [ -n "$line" ] || continue
      pid=${line%% *}
      case "$tree" in *" $pid "*) continue ;; esac
      set -- ${line##*) }
      case "$tree" in *" $2 "*) tree="$tree$pid "; grown=1; continue ;; esac
      [ "$4" = "$root" ] && { tree="$tree$pid "; grown=1; continue; }
      case "$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null)" in
        *"$mark"*) tree="$tree$pid "; grown=1 ;;
      esac
    done
  done
  if [ $pass = 0 ]; then kill -STOP $tree 2>/dev/null; else kill -KILL $tree 2>/dev/null; fi
  pass=$((pass + 1))
done
exit 0
"""


def env_list(env: Mapping[str, str] | None) -> list[str] | None:
    return [f"{key}={value}" for key, value in env.items()] if env else None


class PidHeader:
    """Takes the ``<pid>\\n`` line off the front of stdout."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self._pending = b""
        self._done = False

    def feed(self, chunk: bytes) -> bytes:
        if self._done:
            return chunk
        self._pending += chunk
        head, sep, rest = self._pending.partition(b"\n")
        if not sep:
            return b""
        self._done = True
        self._pending = b""
        if head.strip().isdigit():
            self.pid = int(head)
        return rest


def start(api, container: str, cmd: list[str], *, user: str | None, env, cwd: str | None,
          stdin: bool) -> tuple[str, EngineStream]:
    """Create and start an exec; returns (exec id, its hijacked connection)."""
    created = api.exec_create(container, PRELUDE + list(cmd), stdin=stdin, stdout=True, stderr=True,
                              user=user or "0", environment=env_list(env), workdir=cwd)
    exec_id = created["Id"]
    return exec_id, exec_stream(api, exec_id)


def exit_code(api, exec_id: str) -> int:
    """The exec's exit code, waiting the moment it takes the engine to record it."""
    delay = 0.002
    for _ in range(200):
        info = api.exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    raise InfraError(f"exec {exec_id[:12]}: the engine never reported an exit code")


def kill_tree(api, container: str, pid: int | None, marker: str) -> None:
    """Kill the process tree rooted at ``pid`` (and everything carrying ``marker``); never raises."""
    if pid is None:
        return
    try:
        exec_id = api.exec_create(container, ["/bin/sh", "-c", KILL_TREE, "sh", str(pid), marker], user="0")
        api.exec_start(exec_id["Id"])
    except Exception:  # noqa: BLE001 - the container may be gone already, which is the goal
        pass


def _kill_and_close(api, container: str, pid: int | None, marker: str, streams: list) -> None:
    """After a cancelled exec: kill its tree, then close its stream, which an engine may hold
    open for ever once the container is gone (dockerd with gVisor's runsc does), so that no
    worker thread waits on it and keeps the process from exiting."""
    kill_tree(api, container, pid, marker)
    for stream in streams:
        stream.wake()
        stream.close()


def _run_blocking(api, container, cmd, user, env, cwd, stdin: bytes | None, out: CappedOutput,
                  err: CappedOutput, header: PidHeader, box: list) -> int:
    exec_id, conn = start(api, container, cmd, user=user, env=env, cwd=cwd, stdin=stdin is not None)
    box.append(conn)
    try:
        if stdin is not None:
            POOL.submit(_feed, conn, stdin)
        for stream, chunk in conn.frames():
            if stream == 1:
                chunk = header.feed(chunk)
                if chunk:
                    out.add(chunk)
            elif stream == 2:
                err.add(chunk)
    except OSError:
        pass  # closed under us after a timeout
    finally:
        conn.close()
    return exit_code(api, exec_id)


def _feed(conn: EngineStream, data: bytes) -> None:
    try:
        conn.sendall(data)
    except OSError:
        return
    conn.close_write()


async def run(api, container: str, cmd: list[str], *, user: str | None, env, cwd: str | None,
              timeout: float | None, stdin: bytes | None, output_cap: int) -> ExecResult:
    """Run ``cmd`` to completion (see module docstring for the timeout and cap rules)."""
    if not cmd:
        raise ValueError("exec needs a command (an argv list)")
    out, err, header, box = CappedOutput(output_cap), CappedOutput(output_cap), PidHeader(), []
    marker = secrets.token_hex(8)
    env = {**(env or {}), "BENCHFLOW_EXEC_ID": marker}
    worker = asyncio.ensure_future(call(_run_blocking, api, container, cmd, user, env, cwd, stdin,
                                        out, err, header, box))
    timed_out = False
    try:
        code = await asyncio.wait_for(asyncio.shield(worker), timeout)
    except asyncio.TimeoutError:
        timed_out = True
        await call(kill_tree, api, container, header.pid, marker)
        try:
            await asyncio.wait_for(asyncio.shield(worker), DRAIN_AFTER_KILL_SEC)
        except asyncio.TimeoutError:
            for conn in box:
                conn.wake()
                conn.close()
        await asyncio.gather(worker, return_exceptions=True)
        code = TIMEOUT_RC
    except asyncio.CancelledError:
        POOL.submit(_kill_and_close, api, container, header.pid, marker, box)
        raise
    except InfraError:
        raise
    except Exception as exc:  # noqa: BLE001 - transport/engine failure mid-exec
        raise InfraError(f"exec in {container[:12]} failed: {exc}") from exc
    stderr = err.text()
    if timed_out:
        stderr += f"\n[timed out after {timeout:g}s; the process tree was killed]\n"
    return ExecResult(return_code=code, stdout=out.text(), stderr=stderr, timed_out=timed_out,
                      truncated=bool(out.dropped or err.dropped))
