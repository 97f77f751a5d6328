"""Talking to Apple's ``container`` CLI (github.com/apple/container): finding it, running it, reading it.

The CLI is the only interface Apple ships (its API server speaks XPC on macOS),
so every call here is one ``container`` process. What this module relies on
is the CLI's documented surface: ``system status`` (exit 0 when the API server
answers), ``list --all --format json`` and ``inspect`` (arrays of container
snapshots: ``configuration.id``, ``configuration.labels``,
``configuration.image.reference``, and ``status`` either the state string of
the 0.x releases or an object with ``state`` in later ones; ``startedDate`` a
Swift ``Date``: seconds since 2001-01-01, or ISO 8601 text in later releases),
and ``delete --force``.

The CLI runs only on macOS. :data:`ANY_OS_ENV` is a **test hook**: set to ``1``
it lets the backend use a ``container`` executable on another system, which
only the CLI double of ``tests/doubles/apple_container_cli_double.py`` provides.

Owner liveness: the owner labels of :mod:`.docker_engine` read a process's
start time from ``/proc``, which macOS has not; there the start time is the
one ``ps -o lstart=`` prints, so a recycled pid is still told from the owner.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from datetime import datetime

from benchflow.errors import SandboxUnavailable

from .. import docker_engine as eng

CLI = "container"
ANY_OS_ENV = "BENCHFLOW_APPLE_CONTAINER_ANY_OS"
"""Test hook: ``1`` allows a ``container`` executable on a system other than macOS (the CLI double)."""
STATUS_TIMEOUT_SEC = 15
CALL_TIMEOUT_SEC = 120
SWIFT_EPOCH = 978307200
"""Seconds from 1970-01-01 to 2001-01-01, the epoch of Swift's ``Date`` as ``JSONEncoder`` writes it by default."""
NEEDS = "needs macOS 26 with Apple's container CLI (github.com/apple/container)"


def executable() -> str:
    """The ``container`` executable to run.

    Raises:
        SandboxUnavailable: not macOS (without the test hook), or no ``container`` on PATH.
    """
    if sys.platform != "darwin" and os.environ.get(ANY_OS_ENV) != "1":
        raise SandboxUnavailable(f"--sandbox apple-container {NEEDS}; this is {sys.platform}")
    found = shutil.which(CLI)
    if found is None:
        raise SandboxUnavailable(f"--sandbox apple-container {NEEDS}: no `{CLI}` on PATH "
                                 "(install its signed package from the project's releases page)")
    return found


def run(args: list[str], *, timeout: float = CALL_TIMEOUT_SEC,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """One CLI call to its end (bytes out). A call that cannot start or hangs raises
    :class:`SandboxUnavailable`; a non-zero exit is the caller's to judge."""
    argv = [executable(), *args]
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False,
                              env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"`{CLI} {' '.join(args[:2])}` did not answer: {exc}") from exc


def error_line(done: subprocess.CompletedProcess) -> str:
    """The last line the CLI printed on a failure (it writes ``Error: …``), for a message."""
    text = (done.stderr or b"").decode(errors="replace").strip() or (done.stdout or b"").decode(errors="replace")
    return (text.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:300]


def status() -> tuple[bool, str]:
    """(the API server answers, a one-line reason). Never raises."""
    try:
        done = run(["system", "status"], timeout=STATUS_TIMEOUT_SEC)
    except SandboxUnavailable as exc:
        return False, str(exc)
    if done.returncode != 0:
        return False, (f"Apple's container services do not answer ({error_line(done)}); "
                       f"start them with `{CLI} system start`")
    version = run(["--version"], timeout=STATUS_TIMEOUT_SEC)
    said = (version.stdout or b"").decode(errors="replace").strip().splitlines()
    return True, f"Apple container ({said[0] if said else 'version unknown'})"


def snapshots(ids: list[str] | None = None) -> list[dict]:
    """Every container (``list --all``), or those of ``ids`` that exist (``inspect``), as the CLI's JSON.

    Raises:
        SandboxUnavailable: the CLI failed or printed something that is not a list.
    """
    if ids is not None:
        found = []
        for sandbox_id in ids:  # one at a time: inspect fails as a whole when one id is missing
            done = run(["inspect", sandbox_id])
            if done.returncode == 0:  # the CLI searches by prefix too: only the id itself counts
                found.extend(item for item in _parse(done, "inspect") if container_id(item) == sandbox_id)
        return found
    done = run(["list", "--all", "--format", "json"])
    if done.returncode != 0:
        raise SandboxUnavailable(f"`{CLI} list` failed: {error_line(done)}")
    return _parse(done, "list")


def _parse(done: subprocess.CompletedProcess, what: str) -> list[dict]:
    try:
        items = json.loads(done.stdout or b"[]")
    except ValueError as exc:
        raise SandboxUnavailable(f"`{CLI} {what}` printed no JSON: {exc}") from exc
    if not isinstance(items, list):
        raise SandboxUnavailable(f"`{CLI} {what}` printed {type(items).__name__}, not a list")
    return [item for item in items if isinstance(item, dict)]


def container_id(item: dict) -> str:
    return str((item.get("configuration") or {}).get("id") or item.get("id") or "")


def labels(item: dict) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((item.get("configuration") or {}).get("labels") or {}).items()}


def state(item: dict) -> str:
    """``running``, ``stopped``, …: the status string of 0.x, or ``status.state`` of later releases."""
    value = item.get("status")
    if isinstance(value, dict):
        value = value.get("state")
    return str(value or "unknown")


def image(item: dict) -> str:
    return str(((item.get("configuration") or {}).get("image") or {}).get("reference") or "")


def started(item: dict) -> float | None:
    """When it started (epoch seconds), from ``startedDate`` in either encoding; None when unknown."""
    value = item.get("startedDate")
    if value is None and isinstance(item.get("status"), dict):
        value = item["status"].get("startedDate")
    if isinstance(value, (int, float)):
        return float(value) + SWIFT_EPOCH
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None


def start_stamp(pid: int) -> str | None:
    """A process's start time: ``/proc``'s clock ticks (Linux), else what ``ps`` prints (macOS)."""
    ticks = eng.process_start_ticks(pid)
    if ticks is not None or os.path.isdir("/proc"):
        return ticks
    try:
        done = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def owner_labels(extra: dict[str, str]) -> dict[str, str]:
    """The owner labels of :func:`.docker_engine.owner_labels`, the start time read the way this host can."""
    made = eng.owner_labels(extra)
    made[eng.PID_START] = start_stamp(os.getpid()) or ""
    return made


def owner_alive(marks: dict[str, str]) -> bool | None:
    """As :func:`.docker_engine.owner_alive`, on macOS too."""
    pid = marks.get(eng.PID, "")
    if not pid.isdigit() or marks.get(eng.HOST) != socket.gethostname():
        return None
    now = start_stamp(int(pid))
    if now is None:
        return False
    recorded = marks.get(eng.PID_START)
    return not recorded or recorded == now


def host_resources() -> tuple[float | None, int | None]:
    """(CPUs, memory in MiB) of this machine: ``sysctl hw.memsize`` on macOS, ``sysconf`` elsewhere."""
    cpus = os.cpu_count()
    memory = None
    try:
        if sys.platform == "darwin":
            said = subprocess.run(["sysctl", "-n", "hw.memsize"], capture_output=True, text=True, timeout=10,
                                  check=False).stdout.strip()
            memory = int(said) >> 20 if said.isdigit() else None
        else:
            memory = (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) >> 20
    except (OSError, ValueError, subprocess.TimeoutExpired):
        memory = None
    return (float(cpus) if cpus else None), memory
