"""The one folder BenchFlow keeps things in between runs on this machine.

``$BENCHFLOW_CACHE`` when set (tests point it at a private folder), else
``$XDG_CACHE_HOME/benchflow``, else ``~/.cache/benchflow``. Everything cached
(local sandboxes and layers, agent install layers, the record of pulled images,
crash logs, the marks of Apple containers kept with ``--keep-sandbox``) lives
below it, so one variable moves or isolates all of it.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    explicit = os.environ.get("BENCHFLOW_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "benchflow"
