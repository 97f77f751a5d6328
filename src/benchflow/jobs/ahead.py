"""Import the modules a trial needs once its sandbox runs, while the engine starts the first one.

Why: creating and starting a container is 0.3-0.4 s of the engine's time, and ``bench run``
only waits meanwhile (the engine calls run in a worker thread; the event loop idles). The
verifier's modules (~25 ms of CPU) used to be imported after that wait, on the run's serial
path. :func:`begin`, called when the first sandbox's build begins, imports them in a thread,
so that CPU is spent inside the wait (this machine has 2 cores; the engine uses part of one).

:func:`ready` is awaited by a trial once its sandbox is up, before any phase imports: the main
thread then never imports concurrently with the thread, so two imports can never wait on each
other's module locks (CPython's import lock is per module). A module that fails to import here
is left alone: the phase that needs it imports it again and raises the error where it matters.
"""

from __future__ import annotations

import asyncio
import importlib
import threading

from benchflow.util import startup_gc

from .extensions import FEATURES

AFTER_START = (
    "benchflow.jobs.agent_network",
    *(module for row in FEATURES for module in row.ahead),  # the steps', scenes' and separate verifier's
    "benchflow.jobs.setup_commands",
    "benchflow.jobs.artifacts",
    "benchflow.sandbox.copyout",
    "benchflow.sandbox.tarstream",
    "benchflow.verify.runner",
    "benchflow.verify.fence",
    "benchflow.tasks.verifier_doc",
    "benchflow.jobs.summary",
    "benchflow.jobs.result_record",
)
"""What a plain trial imports only after its sandbox has started (``-X importtime`` of one run)."""

_lock = threading.Lock()
_done = threading.Event()
_begun = False


def begin() -> None:
    """Start importing :data:`AFTER_START` in a daemon thread (once per process); the process has
    started (:func:`benchflow.util.startup_gc.started`)."""
    global _begun
    with _lock:
        if _begun:
            return
        _begun = True
    startup_gc.started()
    threading.Thread(target=_import_all, name="benchflow-import-ahead", daemon=True).start()


def _import_all() -> None:
    try:
        for name in AFTER_START:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001,S110 - the phase that needs it raises it again
                pass
    finally:
        _done.set()


async def ready() -> None:
    """Return once :func:`begin`'s imports are done (at once when they are, or were never begun)."""
    if _begun and not _done.is_set():
        await asyncio.to_thread(_done.wait)
