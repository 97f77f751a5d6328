"""Read each job once: ``load_job`` results kept until a trial folder under the job changes.

A folder of 100 jobs × 100 trials takes over a second to read; the Pareto,
Outcomes and Training tabs and the jobs list all start from the same
documents, so they are kept in memory, keyed by the job's *signature*: the
modification times of the job folder and of every trial folder in it. Every
file a trial writes is renamed into its folder (``util.atomic``), which
changes that folder's time, so a running job is re-read as its trials finish,
at the cost of one ``stat`` per trial folder.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from benchflow.results import JobDocument, load_job

T = TypeVar("T")


def signature(job: Path) -> tuple[Any, ...]:
    """The job folder's time and each child folder's (name, time), sorted."""
    try:
        top = os.stat(job).st_mtime_ns
        with os.scandir(job) as entries:
            children = sorted((e.name, e.stat().st_mtime_ns) for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return (None,)
    return (top, tuple(children))


class JobCache:
    """``load_job`` (as ``bench eval inspect`` reads it) per job folder, and derived values per set of jobs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[Path, tuple[tuple[Any, ...], JobDocument]] = {}
        self._reading: dict[Path, threading.Lock] = {}
        """One lock per job folder: two requests (or a request and the warm-up) never read the same job twice."""
        self._derived: dict[Any, tuple[tuple[Any, ...], Any]] = {}
        self._compute = threading.Lock()
        """Held while a derived value is computed, so a page load waits for the warm-up instead of repeating it."""

    def job(self, path: Path) -> JobDocument:
        with self._lock:
            reading = self._reading.setdefault(path, threading.Lock())
        with reading:
            sig = signature(path)
            hit = self._jobs.get(path)
            if hit is not None and hit[0] == sig:
                return hit[1]
            doc = load_job(path)
            self._jobs[path] = (sig, doc)
            return doc

    def derived(self, key: Any, jobs: list[Path], build: Callable[[], T]) -> T:
        """``build()`` once per ``key`` while none of ``jobs`` changed."""
        with self._compute:
            sig = tuple(signature(path) for path in jobs)
            hit = self._derived.get(key)
            if hit is not None and hit[0] == sig:
                return hit[1]
            value = build()
            self._derived[key] = (sig, value)
            return value
