"""A bound environment's life inside one trial's sandbox: its services started, the agent gated on their
readiness, and stopped again once the trial is verified.

The services run inside the trial's own sandbox (the agent and the verifier reach them on ``localhost``),
as root, so the verifier's fence, which stops the agent's processes, leaves them running for the tests.
A service whose program does not run in this image (``<program> --help`` fails) is skipped: one manifest
serves a whole benchmark whose task images each hold a subset; none runnable at all is an error. Each
service is a long-lived process of the sandbox (``exec_stream``, as an ACP agent is: on every backend it
lives as long as it is not stopped, the local sandbox's one-shot execs included) with its output in
``/tmp/benchflow-env-<name>.log``; readiness is polled from inside the sandbox until the manifest's
``readiness.timeout_sec`` has passed (curl, wget, python3 or bash's ``/dev/tcp``, whichever the image has).
Teardown stops each process and waits for it to end. What happened is ``environment-plane.json`` in the
trial folder.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import time
from dataclasses import dataclass, field
from typing import Any

from benchflow.errors import BenchError, SandboxError
from benchflow.sandbox.base import Process, Sandbox
from benchflow.util import atomic

from .binding import Binding
from .manifest import Service

_RUNS = 'command -v "$0" >/dev/null 2>&1 && "$0" --help >/dev/null 2>&1'
_SERVE = 'exec sh -c "$0" </dev/null >"$1" 2>&1'
# $0 http|tcp, $1 URL or port, $2 seconds left. Exit 0 ready, 1 not by then, 9 nothing here to probe with.
_PROBE = r'''
kind=$0; target=$1; end=$(( $(date +%s) + $2 ))
probe() {
  if [ "$kind" = http ]; then
    if command -v curl >/dev/null 2>&1; then curl -sf -o /dev/null --max-time 2 "$target"
    elif command -v wget >/dev/null 2>&1; then wget -q -O /dev/null -T 2 "$target"
    elif command -v python3 >/dev/null 2>&1; then
      python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$target" 2>/dev/null
    else return 9; fi
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2).close()' "$target" 2>/dev/null
  elif command -v bash >/dev/null 2>&1; then bash -c ': </dev/tcp/127.0.0.1/$0' "$target" 2>/dev/null
  else return 9; fi
}
while :; do
  probe; rc=$?
  [ $rc = 0 ] && exit 0
  [ $rc = 9 ] && exit 9
  [ "$(date +%s)" -ge "$end" ] && exit 1
  sleep 0.5
done
'''
STOP_WAIT_SEC = 30


def log_path(service: Service) -> str:
    return f"/tmp/benchflow-env-{service.name}.log"


@dataclass
class Provisioned:
    """One trial's bound environment, as ``environment-plane.json`` records it."""

    binding: Binding
    services: list[dict[str, Any]] = field(default_factory=list)
    readiness: dict[str, Any] | None = None
    teardown: dict[str, Any] | None = None
    processes: dict[str, Process] = field(default_factory=dict)
    """The running services, by name (not recorded)."""

    def document(self) -> dict[str, Any]:
        return {"kind": "benchflow.environment-plane", "schema_version": 1, "binding": self.binding.record(),
                "services": self.services, "readiness": self.readiness, "teardown": self.teardown}


def service_env(binding: Binding, task_name: str) -> dict[str, str]:
    """What the started services get: the task's name (``task_selection`` ``env_var``) and the host
    variables ``forward_env`` names that are set (never written anywhere)."""
    manifest = binding.manifest
    env = {manifest.task_selection.key: task_name} if manifest.task_selection.mechanism == "env_var" else {}
    env.update({key: os.environ[key] for key in manifest.forward_env.keys if key in os.environ})
    return env


async def provision(done: Provisioned, sandbox: Sandbox, task_name: str, record_path: Any) -> None:
    """Start the bound manifest's services that run in this image (each one on ``done`` as it starts, for
    :func:`teardown` whatever happens next) and wait until the environment is ready.

    Raises:
        SandboxError: no declared service runs in this image, a service did not start, or a probe was not
            answered in time (the record says which, with the service's log tail).
    """
    manifest = done.binding.manifest
    env = service_env(done.binding, task_name)
    try:
        for service in manifest.services:
            runs = await sandbox.exec(["sh", "-c", _RUNS, service.program], timeout=30)
            if not runs.success:
                done.services.append({"name": service.name, "port": service.port, "status": "not_installed"})
                continue
            process = await sandbox.exec_stream(["sh", "-c", _SERVE, service.command, log_path(service)], env=env)
            process.stdin.close()
            done.processes[service.name] = process
            done.services.append({"name": service.name, "port": service.port, "status": "started",
                                  "log": log_path(service)})
        started_services = [s for s in manifest.services if s.name in done.processes]
        if manifest.services and not started_services:
            raise SandboxError(f"environment {manifest.name}: none of its {len(manifest.services)} services runs in "
                               f"this task's image (probed {', '.join(s.program for s in manifest.services)} "
                               "--help); build the task FROM the manifest's base_image or fix the manifest",
                               deterministic=True)
        await _ready(manifest, started_services, sandbox, done)
    finally:
        atomic.write_json(record_path, done.document())


async def _ready(manifest: Any, started: list[Service], sandbox: Sandbox, done: Provisioned) -> None:
    deadline = time.monotonic() + manifest.readiness.timeout_sec
    probes: list[dict[str, Any]] = []
    done.readiness = {"timeout_sec": manifest.readiness.timeout_sec, "ready": False, "probes": probes}
    t0 = time.monotonic()
    for kind, target in manifest.probes(started):
        left = max(1, int(deadline - time.monotonic() + 0.999))
        answered = await sandbox.exec(["sh", "-c", _PROBE, kind, target, str(left)], timeout=left + 30)
        probes.append({"kind": kind, "target": target, "ready": answered.success,
                       "elapsed_sec": round(time.monotonic() - t0, 2)})
        if answered.return_code == 9:
            raise SandboxError(f"environment {manifest.name}: the task's image has no "
                               f"{'curl, wget or python3' if kind == 'http' else 'python3 or bash'} to probe "
                               f"{target} with; add one to the image", deterministic=True)
        if not answered.success:
            tail = await _log_tail(sandbox, started, target)
            raise SandboxError(f"environment {manifest.name} not ready: {target} did not answer within "
                               f"{manifest.readiness.timeout_sec:g}s" + (f"; its log ends: {tail}" if tail else ""))
    done.readiness.update(ready=True, elapsed_sec=round(time.monotonic() - t0, 2))


async def _log_tail(sandbox: Sandbox, started: list[Service], target: str) -> str:
    service = next((s for s in started if f":{s.port}" in target or target == str(s.port)), None)
    if service is None:
        return ""
    read = await sandbox.exec(["sh", "-c", 'tail -c 400 "$0" 2>/dev/null', log_path(service)], timeout=30)
    return " ".join(read.stdout.split())[-300:]


async def teardown(done: Provisioned, sandbox: Sandbox, record_path: Any) -> None:
    """Stop every service :func:`provision` started and wait for each to end; record it."""
    stopped, failed = [], []
    for name, process in done.processes.items():
        try:
            await process.kill()
            await asyncio.wait_for(process.wait(), STOP_WAIT_SEC)
            stopped.append(name)
        except (BenchError, OSError, asyncio.TimeoutError):
            failed.append(name)
    done.processes.clear()
    done.teardown = {"stopped": stopped, "not_stopped": failed, "at": dt.datetime.now(dt.timezone.utc).isoformat()}
    atomic.write_json(record_path, done.document())
