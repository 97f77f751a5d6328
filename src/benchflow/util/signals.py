"""SIGTERM treated like Ctrl-C: it cancels the running job's task, so every trial cleans up."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def sigterm_cancels_current_task() -> Iterator[None]:
    """While the block runs, SIGTERM cancels the task running it (where the loop can take signals)."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    try:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signal support
        pass
    try:
        yield
    finally:
        try:
            loop.remove_signal_handler(signal.SIGTERM)
        except (NotImplementedError, RuntimeError):
            pass
