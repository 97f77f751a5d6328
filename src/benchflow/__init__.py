"""BenchFlow: run AI agents against benchmark tasks in sandboxes and score them.

``import benchflow`` does nothing but define the version: the public API is
imported on first use through :func:`__getattr__`, so ``bf.load_job`` costs
its import only when called. Add a row to ``_LAZY`` to publish a name.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.10.0"

_LAZY: dict[str, str] = {
    "run": "benchflow.jobs.public",
    "load_job": "benchflow.results",
    "load_trial": "benchflow.results",
    "compare": "benchflow.results",
    "iter_trajectory": "benchflow.results",
    "JobDocument": "benchflow.results",
    "TrialDocument": "benchflow.results",
    "TrialSummary": "benchflow.results",
    "Comparison": "benchflow.results",
}
"""Public name -> module that defines it."""

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'benchflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
