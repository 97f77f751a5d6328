"""A task's ``sandbox.setup_commands`` and ``sandbox.healthcheck``, run once the sandbox is up and
before the agent is installed or started (contracts §1.4).

Each setup command runs as ``sh -c`` with its own user, cwd (default: the
workspace), env and timeout; its output goes to ``setup/command-<i>.txt`` in
the trial folder and a summary to ``setup/setup.json``. A ``host_lock`` holds
a host-wide lock (``true``: one per task and command; a string: that name)
while the command runs, so trials of one machine do not run it at once.
``capture_dir`` packs that folder (``tar | gzip | base64``) right after its
command, before the agent can touch it, and hands it to the verifier as the
variable ``capture_dir_b64_env`` (and, with ``capture_dir_b64_env_file_var``,
as a root-owned file whose path that variable holds).

The healthcheck runs after the setup commands: probes every
``start_interval_sec`` during ``start_period_sec`` (failures there do not
count), then every ``interval_sec``; ``retries`` failures in a row fail the
trial. Any failure is a ``sandbox startup failed: …`` error (category
``sandbox_setup``) and the agent never starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError
from benchflow.util import atomic
from benchflow.util.redact import redact_text

CAPTURE_ROOT = "/var/lib/benchflow/captures"
MAX_ENV_CAPTURE = 96 << 10
"""Largest base64 capture put in a variable (a variable's value is capped near 128 KiB by Linux)."""
_PACK = 'cd "$0" && tar -cf - . | gzip -n | base64 | tr -d "\\n"'
_STORE = ('umask 022; mkdir -p "$(dirname "$0")" && chmod 0755 "$(dirname "$0")" && cat > "$0" '
          '&& chown 0:0 "$0" && chmod 0644 "$0"')


class SetupFailed(Exception):
    """A setup command or the healthcheck failed; the message is the trial's error. Not a BenchError: the
    environment phase records it as ``sandbox_setup``; a BenchError would be caught earlier as another category."""


def _lock_path(name: str) -> Path:
    folder = Path(tempfile.gettempdir()) / "benchflow-host-locks"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / (hashlib.sha256(name.encode()).hexdigest()[:32] + ".lock")


@contextlib.asynccontextmanager
async def host_lock(name: str | None) -> AsyncIterator[None]:
    """Hold the host-wide lock ``name`` (no-op for None); waits without blocking the event loop."""
    if name is None:
        yield
        return
    fd = os.open(_lock_path(name), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(0.1)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _lock_name(task: Any, index: int, value: str | bool | None) -> str | None:
    if value is None or value is False:
        return None
    return f"{task.name}#setup{index}" if value is True else str(value)


async def run_setup(sandbox: Any, task: Any, folder: Path, secrets: tuple[str, ...] = ()) -> dict[str, str]:
    """Run the task's setup commands, then its healthcheck; returns the verifier's capture variables.

    Raises:
        SetupFailed: a command failed or timed out, a capture failed, or the healthcheck never passed.
    """
    cfg = task.config.sandbox
    captures: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    if cfg.setup_commands or cfg.healthcheck:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        for i, cmd in enumerate(cfg.setup_commands):
            records.append(await _one(sandbox, task, i, cmd, folder, secrets, captures))
        if cfg.healthcheck is not None:
            await _healthcheck(sandbox, cfg.healthcheck, folder, secrets)
    finally:
        if records:
            atomic.write_json(folder / "setup.json", {"commands": records})
    return captures


async def _one(sandbox: Any, task: Any, i: int, cmd: Any, folder: Path, secrets: tuple[str, ...],
               captures: dict[str, str]) -> dict[str, Any]:
    if cmd.service != "main":
        raise SetupFailed(f"sandbox startup failed: setup_commands[{i}].service '{cmd.service}': this "
                          "sandbox runs setup commands in 'main' only")
    user = None if cmd.user is None else str(cmd.user)
    started = time.monotonic()
    async with host_lock(_lock_name(task, i, cmd.host_lock)):
        try:
            result = await sandbox.exec(["sh", "-c", cmd.command], user=user, env=dict(cmd.env) or None,
                                        cwd=cmd.cwd or sandbox.workdir, timeout=float(cmd.timeout_sec))
        except BenchError as exc:
            raise SetupFailed(f"sandbox startup failed: setup_commands[{i}] could not run: {exc}") from exc
    output = redact_text(result.stdout + ("\n" if result.stdout and result.stderr else "") + result.stderr,
                         secrets)
    atomic.write_text(folder / f"command-{i}.txt", output)
    record = {"index": i, "return_code": result.return_code, "timed_out": result.timed_out,
              "duration_sec": round(time.monotonic() - started, 2), "user": user, "cwd": cmd.cwd,
              "host_lock": _lock_name(task, i, cmd.host_lock), "output": f"setup/command-{i}.txt"}
    if result.timed_out:
        raise SetupFailed(f"sandbox startup failed: setup_commands[{i}] timed out after {cmd.timeout_sec:g}s")
    if not result.success:
        raise SetupFailed(f"sandbox startup failed: setup_commands[{i}] exited with rc={result.return_code}: "
                          f"{output.strip()[-500:]}")
    if cmd.capture_dir:
        captures.update(await _capture(sandbox, i, cmd))
        record["captured"] = cmd.capture_dir
    return record


async def _capture(sandbox: Any, i: int, cmd: Any) -> dict[str, str]:
    packed = await sandbox.exec(["sh", "-c", _PACK, cmd.capture_dir], timeout=float(cmd.timeout_sec),
                                output_cap=256 << 20)
    if not packed.success:
        raise SetupFailed(f"sandbox startup failed: setup_commands[{i}].capture_dir {cmd.capture_dir} could "
                          f"not be captured (rc={packed.return_code}): {packed.stderr.strip()[-300:]}")
    data = packed.stdout.strip()
    out: dict[str, str] = {}
    if cmd.capture_dir_b64_env_file_var:
        remote = f"{CAPTURE_ROOT}/{i}.b64"
        stored = await sandbox.exec(["sh", "-c", _STORE, remote], stdin=data.encode(), timeout=120)
        if not stored.success:
            raise SetupFailed(f"sandbox startup failed: setup_commands[{i}]: the capture could not be stored")
        out[cmd.capture_dir_b64_env_file_var] = remote
    if len(data) <= MAX_ENV_CAPTURE:
        out[cmd.capture_dir_b64_env] = data
    elif not cmd.capture_dir_b64_env_file_var:
        raise SetupFailed(f"sandbox startup failed: setup_commands[{i}].capture_dir {cmd.capture_dir} packs to "
                          f"{len(data)} bytes, too large for a variable; set capture_dir_b64_env_file_var")
    return out


async def _healthcheck(sandbox: Any, check: Any, folder: Path, secrets: tuple[str, ...]) -> None:
    started = time.monotonic()
    failures = probes = 0
    last = ""
    while True:
        probes += 1
        result = await sandbox.exec(["sh", "-c", check.command], timeout=float(check.timeout_sec))
        last = (result.stdout + result.stderr).strip()[-500:]
        in_start = time.monotonic() - started < check.start_period_sec
        if result.success:
            break
        if not in_start:
            failures += 1
            if failures > check.retries:
                atomic.write_json(folder / "healthcheck.json", {"healthy": False, "probes": probes,
                                                                 "last_output": redact_text(last, secrets)})
                raise SetupFailed(f"sandbox startup failed: sandbox.healthcheck failed {failures} times in a row "
                                  f"(rc={result.return_code}): {redact_text(last, secrets)}")
        await asyncio.sleep(check.start_interval_sec if in_start else check.interval_sec)
    atomic.write_json(folder / "healthcheck.json", {"healthy": True, "probes": probes,
                                                     "elapsed_sec": round(time.monotonic() - started, 2)})
