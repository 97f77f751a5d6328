"""Fewer cyclic garbage collections while ``bench`` starts.

Why: loading the CLI and what runs a trial (pydantic building its models, Typer, asyncio) allocates
tens of thousands of objects that live as long as the process. CPython's collector runs its youngest
generation every 700 new objects and walks the survivors again in older generations: ~90 collections,
~7% of what ``bench run`` spends before its first container starts (measured with ``gc.callbacks``).

While a command starts, the youngest generation is collected once per :data:`STARTUP_THRESHOLD` new
objects instead. :func:`started` ends that: everything alive then (modules, classes, the run's
settings) goes to the permanent generation (``gc.freeze``), never walked again, and the thresholds are
as before. ``bench run`` calls it when its first sandbox's build begins (``jobs.ahead``); any other
command gets it at its first collection, so a long-running command (a server) collects as usual.
Other tools do the same for the same reason (mypy raises the threshold for its whole run).
"""

from __future__ import annotations

import gc
from typing import Any

STARTUP_THRESHOLD = 100_000
"""New objects between two collections of the youngest generation while starting (CPython's is 700)."""

_saved: tuple[int, int, int] | None = None
_begun = False


def starting() -> None:
    """Collect rarely from now until :func:`started` (once per process; nothing when gc is off)."""
    global _saved, _begun
    if _begun or not gc.isenabled():
        return
    _begun = True
    _saved = gc.get_threshold()
    gc.set_threshold(STARTUP_THRESHOLD, *_saved[1:])
    gc.callbacks.append(_on_collection)


def started() -> None:
    """Freeze what startup left alive and restore the collector's thresholds (a no-op when not starting)."""
    _end()
    if _on_collection in gc.callbacks:
        gc.callbacks.remove(_on_collection)


def _end() -> None:
    global _saved
    if _saved is None:
        return
    saved, _saved = _saved, None
    gc.freeze()
    gc.set_threshold(*saved)


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    """A command that never starts a sandbox: its startup ends at its first collection. (The callback
    stays registered, a no-op from then on: the collector is going through its list of callbacks.)"""
    if phase == "stop":
        _end()
