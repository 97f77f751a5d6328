"""Pydantic's plugin scan: skipped while no package declares a plugin, and seen again when one is installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(bool(entry_points(group="pydantic")), reason="this environment has a pydantic plugin")

PROBE = """
import importlib.metadata, json, os, sys
scans = []
real = importlib.metadata.entry_points
def counted(**kw):
    scans.append(kw.get("group"))
    return real(**kw)
importlib.metadata.entry_points = counted
from pydantic.plugin import _loader
_loader.entry_points = counted
from benchflow.util.pydantic_plugins import skip_scan_without_plugins
skip_scan_without_plugins()
told_none = _loader._plugins == {}
loaded = [type(p).__name__ for p in _loader.get_plugins()]
print(json.dumps({"told_none": told_none, "loaded": loaded, "scans": len(scans)}))
"""


def _probe(site: Path, cache: Path, **env: str) -> dict:
    environ = {"PATH": "/usr/bin:/bin", "BENCHFLOW_CACHE": str(cache), "PYTHONPATH": str(site), **env}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, env=environ,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _install_plugin(site: Path) -> None:
    (site / "fake_pydantic_plugin.py").write_text(
        "class FakePlugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\n"
        "plugin = FakePlugin()\n")
    dist = site / "fake_pydantic_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-pydantic-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pydantic]\nfake = fake_pydantic_plugin:plugin\n")


def test_no_plugin_declared_is_scanned_once_then_read_from_the_cache(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    first = _probe(site, cache)
    assert first == {"told_none": True, "loaded": [], "scans": 1}
    assert json.loads((cache / "pydantic-plugins.json").read_text())["plugins"] == []
    assert _probe(site, cache) == {"told_none": True, "loaded": [], "scans": 0}


def test_a_plugin_installed_after_the_cache_was_written_is_loaded(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    assert _probe(site, cache)["told_none"] is True
    before = site.stat().st_mtime_ns
    _install_plugin(site)
    if site.stat().st_mtime_ns == before:  # a coarse clock: the folder must look changed, as an install makes it
        os.utime(site, ns=(before + 1_000_000_000, before + 1_000_000_000))
    after = _probe(site, cache)
    assert after["told_none"] is False and after["loaded"] == ["FakePlugin"]
    assert json.loads((cache / "pydantic-plugins.json").read_text())["plugins"] == ["fake_pydantic_plugin:plugin"]


def test_pydantics_own_switch_is_left_to_pydantic(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    _install_plugin(site)
    assert _probe(site, cache, PYDANTIC_DISABLE_PLUGINS="__all__") == {"told_none": False, "loaded": [], "scans": 0}
    assert not (cache / "pydantic-plugins.json").exists()


FRESH = """
import json, sys
from benchflow.util.pydantic_plugins import skip_scan_without_plugins
skip_scan_without_plugins()
import pydantic
class Model(pydantic.BaseModel):
    x: int
assert Model(x="1").x == 1
from pydantic.plugin import _loader
print(json.dumps({"metadata": "importlib.metadata" in sys.modules,
                  "loaded": [type(p).__name__ for p in _loader.get_plugins()]}))
"""


def _fresh(site: Path, cache: Path) -> dict:
    environ = {"PATH": "/usr/bin:/bin", "BENCHFLOW_CACHE": str(cache), "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, cwd=ROOT, env=environ,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_a_plugin_models_build_and_the_loader_and_its_metadata_scan_are_never_imported(tmp_path):
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    _fresh(site, cache)  # the first run scans and writes the cache
    assert _fresh(site, cache) == {"metadata": False, "loaded": []}
    _install_plugin(site)
    os.utime(site, ns=(site.stat().st_mtime_ns + 1_000_000_000,) * 2)
    assert _fresh(site, cache) == {"metadata": True, "loaded": ["FakePlugin"]}  # the real loader, as pydantic has it


def test_pydantic_asks_its_plugin_loader_for_get_plugins_only():
    """The stand-in answers ``get_plugins`` (and keeps the loader's state names): a pydantic that imports
    anything else from ``pydantic.plugin._loader`` needs the stand-in to grow."""
    import ast

    import pydantic

    asked: set[str] = set()
    for path in Path(pydantic.__file__).parent.rglob("*.py"):
        if path.name == "_loader.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("_loader") and \
                    ("plugin" in (node.module or "") or path.parent.name == "plugin"):
                asked.update(alias.name for alias in node.names)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "_loader":
                asked.add(node.attr)
    assert asked == {"get_plugins"}
