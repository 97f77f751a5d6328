"""The shell lines a remote sandbox (Daytona, Modal, AgentCore) runs: an argv turned into one marked command.

Daytona runs a session command as a line of its session's shell, so every
command here is a fresh ``sh -c`` (an ``exec`` inside it never replaces the
session's shell), carries a per-exec marker in its environment
(``BENCHFLOW_EXEC_ID``, which ``setsid`` children keep) and reads its stdin
from a file or ``/dev/null`` (never the session's input, which would block).
A non-root user is reached through ``su`` (no login: the environment stays).

A streaming command (``exec_stream``) reads its stdin through a relay: each
write arrives as one base64 line on the command's input and a line ``.`` is
end-of-file, because Daytona's input endpoint has no way to close stdin. Its
stdout comes back through Daytona's logs, which are text, so it is encoded as
base64 lines by ``python3`` or ``node`` (whichever the image has; the model
bridge's binary frames need one of them anyway); with neither, a first line
``~raw`` says it comes as is (text only).

A timeout or ``kill`` runs :data:`benchflow.sandbox.docker_exec.KILL_TREE` as
root with the marker: every process carrying it is stopped, then killed.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Mapping

from .docker_exec import KILL_TREE

MARKER = "BENCHFLOW_EXEC_ID"
EOF_LINE = b".\n"
RELAY = 'while IFS= read -r l; do [ "$l" = . ] && break; printf %s "$l" | base64 -d; done'
ROOT_USERS = (None, "root", "0")


def argv(cmd: list[str], *, cwd: str, env: Mapping[str, str] | None, user: str | None) -> list[str]:
    """``cmd`` in ``cwd`` with ``env`` added, as ``user`` (None or root: root)."""
    if not cmd:
        raise ValueError("exec needs a command (an argv list)")
    inner = ["env", *(f"{key}={value}" for key, value in (env or {}).items()), *cmd]
    enter = 'cd "$0" && exec "$@"'
    if user in ROOT_USERS:
        return ["sh", "-c", enter, cwd, *inner]
    return ["su", "-s", "/bin/sh", "-c", enter, "--", str(user), cwd, *inner]


def command_line(words: list[str], marker: str, *, stdin_path: str | None = None) -> str:
    """One session command: ``words`` with the marker set and stdin from ``stdin_path`` (or nothing)."""
    return f"{MARKER}={marker} {shlex.join(words)} < {shlex.quote(stdin_path or '/dev/null')}"


RAW_MODE = "~raw\n"
PY_ENCODE = ("import os, base64\n"
             "while True:\n"
             "    data = os.read(0, 65536)\n"
             "    if not data:\n"
             "        break\n"
             "    os.write(1, base64.b64encode(data) + b'\\n')\n")
JS_ENCODE = "process.stdin.on('data', d => process.stdout.write(d.toString('base64') + '\\n'))"
ENCODE = (f"if command -v python3 >/dev/null 2>&1; then exec python3 -u -c {shlex.quote(PY_ENCODE)}; "
          f"elif command -v node >/dev/null 2>&1; then exec node -e {shlex.quote(JS_ENCODE)}; "
          f"else printf '%s' {shlex.quote(RAW_MODE)}; exec cat; fi")


def streaming_line(words: list[str], marker: str) -> str:
    """One session command: stdin from the relay of base64 lines, stdout encoded (see the module
    docstring), and the command's own exit status."""
    status = f"/tmp/.bf-status-{marker}"
    script = (f"{{ {RELAY} | {shlex.join(words)}; echo $? > {status}; }} | {{ {ENCODE}; }}; "
              f"rc=$(cat {status} 2>/dev/null || echo 1); rm -f {status}; exit $rc")
    return f"{MARKER}={marker} sh -c {shlex.quote(script)}"


class Decoder:
    """Turns the text a streaming command printed (its logs, growing) back into its stdout bytes."""

    def __init__(self) -> None:
        self.raw: bool | None = None
        self._pending = ""

    def feed(self, text: str) -> bytes:
        self._pending += text
        if self.raw is None:
            if len(self._pending) < len(RAW_MODE) and RAW_MODE.startswith(self._pending):
                return b""
            self.raw = self._pending.startswith(RAW_MODE)
            if self.raw:
                self._pending = self._pending[len(RAW_MODE):]
        if self.raw:
            data, self._pending = self._pending.encode(), ""
            return data
        lines = self._pending.split("\n")
        self._pending = lines.pop()
        return b"".join(base64.b64decode(line) for line in lines if line.strip())


def kill_line(marker: str) -> str:
    """Stop, then kill, every process carrying ``marker`` (run as root, output ignored)."""
    return shlex.join(["sh", "-c", KILL_TREE, "sh", "", marker]) + " < /dev/null"  # no root pid: the marker alone


def relay_chunk(data: bytes) -> str:
    """What one write to a streaming command's stdin is sent as."""
    return base64.b64encode(data).decode("ascii") + "\n"


def capped(text: str, cap: int) -> tuple[str, bool]:
    """``text`` cut at ``cap`` bytes with a note saying how much was dropped; and whether it was cut."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= cap:
        return text, False
    dropped = len(data) - cap
    kept = data[:cap].decode("utf-8", errors="replace")
    return kept + f"\n[output truncated: {dropped} more bytes not shown (cap {cap} bytes)]\n", True
