"""Pydantic's plugin scan, skipped while no installed package declares a pydantic plugin.

The first model pydantic builds makes it look for plugins (the ``pydantic`` entry-point group)
by reading the entry points of every installed distribution: ~150 small files here, 5 ms of CPU
and up to 50 ms on a busy disk, before ``bench run`` starts its first container. Whether any
plugin is declared is kept in the cache, keyed on every ``sys.path`` folder and its mtime
(installing, upgrading or removing a package adds or removes a ``*.dist-info`` folder, which
changes its parent's mtime; a new ``.pth`` folder changes ``sys.path``). While none is declared,
pydantic is told it has none (its loader module is not even imported: a stand-in answers that
there are none); otherwise, or with ``PYDANTIC_DISABLE_PLUGINS`` set, pydantic scans and loads
them itself, as without this module.
"""

from __future__ import annotations

import json
import os
import sys
import types
from typing import Any

from benchflow.util import atomic
from benchflow.util.cache_dir import cache_root

GROUP = "pydantic"
"""Pydantic's entry-point group (``pydantic.plugin._loader.PYDANTIC_ENTRY_POINT_GROUP``)."""


def _path_key() -> list[list[Any]]:
    key: list[list[Any]] = []
    for entry in sys.path:
        where = os.path.abspath(entry or os.curdir)
        try:
            key.append([where, os.stat(where).st_mtime_ns])
        except OSError:
            key.append([where, None])
    return key


def declared_plugins() -> list[str]:
    """The ``module:attr`` of every installed pydantic plugin, from the cache while ``sys.path`` is
    unchanged, else from the installed distributions (then cached)."""
    path = cache_root() / "pydantic-plugins.json"
    key = _path_key()
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = None
    if isinstance(cached, dict) and cached.get("path") == key and isinstance(cached.get("plugins"), list):
        return cached["plugins"]
    from importlib.metadata import entry_points

    plugins = sorted({point.value for point in entry_points(group=GROUP)})
    try:
        atomic.write_json(path, {"path": key, "plugins": plugins})
    except OSError:
        pass  # a read-only cache: the next run scans again
    return plugins


def skip_scan_without_plugins() -> None:
    """Before the first model is built: tell pydantic it has no plugins when none is declared."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") is not None:
        return
    loader = sys.modules.get(LOADER)
    if loader is not None:  # imported already: tell it, unless it has scanned
        if getattr(loader, "_plugins", False) is None and not declared_plugins():
            loader._plugins = {}
        return
    if not declared_plugins():
        sys.modules[LOADER] = _without_plugins()


LOADER = "pydantic.plugin._loader"


def _without_plugins() -> types.ModuleType:
    """What pydantic's plugin loader would answer when no plugin is declared, without importing it.

    Pydantic imports only ``get_plugins`` from it, when it builds its first model; the real module
    imports ``importlib.metadata`` (with email, zipfile and csv: ~6 ms before ``bench run``'s first
    container) for a scan that finds nothing. ``tests/unit/test_pydantic_plugins.py`` checks that
    pydantic still asks it for nothing else. It is put in ``sys.modules`` only (pydantic itself is not
    imported for it): ``from pydantic.plugin import _loader`` finds it there, as pydantic's own
    ``from ._loader import get_plugins`` does.
    """
    module = types.ModuleType(LOADER, "No pydantic plugin is declared (benchflow.util.pydantic_plugins).")
    module.PYDANTIC_ENTRY_POINT_GROUP = GROUP  # type: ignore[attr-defined]
    module._plugins = {}  # type: ignore[attr-defined]
    module._loading_plugins = False  # type: ignore[attr-defined]
    module.get_plugins = _no_plugins  # type: ignore[attr-defined]
    return module


def _no_plugins() -> tuple[()]:
    return ()
