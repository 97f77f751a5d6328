"""Where one ``bench run`` process spends its time: wall and CPU per phase, imports, engine calls.

    .venv/bin/python benchmarks/run_phases.py LAUNCHED_MONOTONIC -- bench-run-args...

Runs ``bench`` in this process with timing hooks and prints one JSON object:
``phases`` (label -> wall s, cpu s, of which imports s), ``engine`` (API call kind -> count,
wall s), ``imports_before_first_container`` (s), ``libraries_before_first_container`` (the
modules not of benchflow the main thread loaded by then, in order), ``total`` (s, from the
parent's launch time, a ``time.monotonic()`` value) and ``cpu``. ``benchmarks/run_overhead.py``
prints the table.

Phases are exclusive: a hooked function's time excludes the hooked functions it calls. Hooks are
placed on names as modules load; a name that no longer exists is skipped (listed in ``missing``),
so the profile degrades instead of breaking when the code moves. Engine calls are timed on the
engine client's HTTP transport (``sandbox.engine_api``; the Docker SDK's for the calls it hands on);
they run in worker threads while the main thread waits in a phase.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import io
import json
import sys
import threading
import time

LAUNCHED = float(sys.argv[1])
START = time.monotonic()

# (module, attribute or Class.method, label)
HOOKS = [
    ("benchflow.jobs.config_file", "build_run_spec", "run spec"),
    ("benchflow.jobs.plan", "_load", "plan: load + digest tasks"),
    ("benchflow.jobs.plan", "choose_sandbox", "plan: backend + engine probe"),
    ("benchflow.jobs.plan", "judge", "plan: run card + fit"),
    ("benchflow.jobs.job", "open_job", "job folder"),
    ("benchflow.sandbox.orphans", "reap", "reap leftovers"),
    ("benchflow.jobs.trial", "run_trial", "trial: records before/after"),
    ("benchflow.sandbox.docker.sandbox", "DockerSandbox.build", "sandbox: image lookup"),
    ("benchflow.sandbox.docker.sandbox", "DockerSandbox.create", "sandbox: create"),
    ("benchflow.sandbox.docker.sandbox", "DockerSandbox.start", "sandbox: start"),
    ("benchflow.jobs.phases", "environment_phase", "phase: environment (uploads)"),
    ("benchflow.jobs.phases", "agent_phase", "phase: agent (run, copy-out)"),
    ("benchflow.verify.fence", "fence", "phase: verifier fence"),
    ("benchflow.verify.fence", "fence_then_run", "phase: verifier fence + the verifier's run"),
    ("benchflow.jobs.phases", "verifier_phase", "phase: verifier (upload, run, copy-out)"),
    ("benchflow.jobs.phases", "record_phase", "phase: record"),
    ("benchflow.sandbox.docker.sandbox", "DockerSandbox.stop", "sandbox: removal"),
    ("benchflow.jobs.summary", "build_summary", "summary"),
]


class Timeline:
    def __init__(self) -> None:
        self.stack = ["import benchflow.cli.main"]
        self.mark = time.monotonic()
        self.cpu_mark = time.process_time()
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.imports: dict[str, float] = {}
        self.depth = threading.local()
        """Per thread: how many imports deep it is (an import on the main thread is timed when it is
        that thread's outermost, whatever other threads are importing)."""
        self.import_total = 0.0
        self.first_container: float | None = None
        self.first_libraries: list[str] = []
        """Modules not of benchflow the main thread loaded before the first container, in order."""

    def _close(self) -> None:
        now, cpu = time.monotonic(), time.process_time()
        label = self.stack[-1]
        self.wall[label] = self.wall.get(label, 0.0) + now - self.mark
        self.cpu[label] = self.cpu.get(label, 0.0) + cpu - self.cpu_mark
        self.mark, self.cpu_mark = now, cpu

    def enter(self, label: str) -> None:
        if label == "sandbox: start" and self.first_container is None:
            self.first_container = self.import_total
        self._close()
        self.stack.append(label)

    def leave(self) -> None:
        self._close()
        self.stack.pop()


TL = Timeline()
MAIN = threading.main_thread()


def wrap(fn, label):
    if getattr(getattr(fn, "__code__", None), "co_flags", 0) & 0x80:  # CO_COROUTINE
        @functools.wraps(fn)
        async def awrapper(*a, **k):
            TL.enter(label)
            try:
                return await fn(*a, **k)
            finally:
                TL.leave()
        return awrapper

    @functools.wraps(fn)
    def wrapper(*a, **k):
        if threading.current_thread() is not MAIN:
            return fn(*a, **k)
        TL.enter(label)
        try:
            return fn(*a, **k)
        finally:
            TL.leave()
    return wrapper


missing: list[str] = []


def patch(module) -> None:
    for name, attr, label in HOOKS:
        if name != module.__name__:
            continue
        owner, _, method = attr.rpartition(".")
        target = getattr(module, owner, None) if owner else module
        if target is None or not hasattr(target, method):
            missing.append(f"{name}.{attr}")
            continue
        setattr(target, method, wrap(getattr(target, method), label))


def timed_exec(exec_module):
    """``exec_module`` of one loader, timed when it is the outermost import on the main thread."""

    def run(module) -> None:
        main = threading.current_thread() is MAIN
        depth = getattr(TL.depth, "n", 0)
        outer = depth == 0 and main
        if main and TL.first_container is None and module.__name__.partition(".")[0] != "benchflow":
            TL.first_libraries.append(module.__name__)
        TL.depth.n = depth + 1
        t = time.monotonic()
        try:
            exec_module(module)
        finally:
            TL.depth.n = depth
            if outer:
                spent = time.monotonic() - t
                TL.import_total += spent
                TL.imports[TL.stack[-1]] = TL.imports.get(TL.stack[-1], 0.0) + spent
        patch(module)
        if module.__name__ == "requests.adapters":
            hook_transport(module)
        if module.__name__ == "benchflow.sandbox.engine_api":
            hook_engine_client(module)
    return run


class TimedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader.exec_module = timed_exec(spec.loader.exec_module)
        return spec


sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder), TimedFinder())

engine: dict[str, list[float]] = {}


def hook_transport(adapters) -> None:
    send = adapters.HTTPAdapter.send

    def timed(self, request, *a, **k):
        t = time.monotonic()
        try:
            return send(self, request, *a, **k)
        finally:
            count(request.method, request.path_url, time.monotonic() - t)
    adapters.HTTPAdapter.send = timed


def count(method: str, path: str, spent: float) -> None:
    parts = [p for p in path.split("?")[0].split("/") if p and not p.startswith("v1.")]
    kind = f"{method} /" + "/".join(p if len(p) < 40 else "{id}" for p in parts[:1] + parts[2:3])
    row = engine.setdefault(kind, [0, 0.0])
    row[0] += 1
    row[1] += spent


def hook_engine_client(api) -> None:
    """Time each request of :class:`benchflow.sandbox.engine_api.EngineClient` (to its response
    headers; a streamed body is read by the caller), hijacks included."""
    send, hijack = api.EngineClient._send, api.EngineClient.hijack

    def timed_send(self, method, path, *a, **k):
        t = time.monotonic()
        try:
            return send(self, method, path, *a, **k)
        finally:
            count(method, path, time.monotonic() - t)

    def timed_hijack(self, path, *a, **k):
        t = time.monotonic()
        try:
            return hijack(self, path, *a, **k)
        finally:
            count("POST", path, time.monotonic() - t)

    api.EngineClient._send, api.EngineClient.hijack = timed_send, timed_hijack


def report(code: int) -> None:
    TL._close()
    out = {"exit_code": code, "total": time.monotonic() - LAUNCHED, "cpu": time.process_time(),
           "interpreter_start": START - LAUNCHED,
           "imports_before_first_container": TL.first_container, "imports_total": TL.import_total,
           "libraries_before_first_container": TL.first_libraries,
           "phases": {k: {"wall": TL.wall[k], "cpu": TL.cpu.get(k, 0.0), "imports": TL.imports.get(k, 0.0)}
                      for k in TL.wall},
           "engine": {k: {"calls": v[0], "wall": v[1]} for k, v in engine.items()}, "missing": missing}
    sys.__stdout__.write(json.dumps(out) + "\n")


def main() -> None:
    """``bench`` as its console script runs it (``cli.main``, exit path included), the command timed."""
    args = sys.argv[sys.argv.index("--") + 1:]
    from benchflow.cli import main as cli

    command = cli.run

    def timed(argv: list[str]) -> int:
        TL.enter("CLI: parse + command imports")
        with contextlib.redirect_stdout(io.StringIO()):
            code = command(argv)
        TL.leave()
        report(code)
        return code

    cli.run = timed
    sys.argv = ["bench", *args]
    cli.main()


if __name__ == "__main__":
    main()
