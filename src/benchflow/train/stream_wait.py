"""How ``bench train stream`` waits between scans of a job folder.

With file-system notification (``watchfiles``: inotify on Linux, FSEvents on
macOS) the stream wakes as soon as a trial's ``result.json``, the job's
``summary.json`` or its lock changes, or a trial folder appears, so a finished rollout goes out within
milliseconds; ``--poll-interval`` stays the upper bound between scans (a
process that dies makes no file event, so the lock is re-checked that often).
Where notification is unavailable (no library, a folder that refuses watches,
a network file system) it falls back to sleeping ``--poll-interval``.

The watcher is kept across waits, so a change made while the stream is
scanning is not lost: the next wait returns at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

WAKE_NAMES = ("result.json", "summary.json", ".lock")


SETTLE_SEC = 0.1
"""How long after a new trial folder appears the stream looks again without waiting for an event.

inotify watches are not recursive: a watch on a new folder is added after its creation event, and
a file written into it before then makes no event. One look shortly after a folder appears closes
that window; a result.json written later makes its own event."""


def _wake_filter(root: Path) -> Callable[[Any, str], bool]:
    top = str(root)

    def wake(_change: Any, path: str) -> bool:
        return path.endswith(WAKE_NAMES) or str(Path(path).parent) == top

    return wake


class JobWaiter:
    """Waits up to ``interval`` seconds, or until the watched job folder changes."""

    def __init__(self, interval: float, sleep: Callable[[float], None] | None = None) -> None:
        self.interval = interval
        self._sleep = sleep or time.sleep
        self._notify = sleep is None  # an injected sleep (tests of the loop itself) means: no notification
        self._root: Path | None = None
        self._changes: Generator[set[Any], None, None] | None = None

    def wait(self, job: Path | None, seconds: float) -> None:
        changes = self._watch(job) if seconds >= self.interval else None
        if changes is None:
            self._sleep(seconds)
            return
        try:
            next(changes)
        except (OSError, RuntimeError, StopIteration):
            self.close()
            self._notify = False

    def _watch(self, job: Path | None) -> Generator[set[Any], None, None] | None:
        if not self._notify or job is None:
            return None
        if self._changes is not None and self._root == job:
            return self._changes
        self.close()
        try:
            import watchfiles
        except ImportError:
            self._notify = False
            return None
        self._root = job
        self._changes = watchfiles.watch(job, watch_filter=_wake_filter(job), debounce=200, step=20,
                                         rust_timeout=max(1, int(self.interval * 1000)), yield_on_timeout=True)
        return self._changes

    def close(self) -> None:
        if self._changes is not None:
            self._changes.close()
        self._changes, self._root = None, None
