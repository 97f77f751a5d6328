"""The sandbox registry: built-in table plus ``benchflow.sandboxes`` entry points, imported lazily."""

from __future__ import annotations

import pytest

from benchflow.errors import ConfigError
from benchflow.sandbox import BACKENDS, get_backend, names
from tests.doubles.docker_variant import PLUGIN_PATH
from tests.fresh_python import python_prints


def test_importing_the_registry_and_listing_names_imports_no_engine_sdk():
    code = ("import sys, benchflow.sandbox as s; s.names(); "
            "print(sorted(m for m in ('docker', 'benchflow.sandbox.docker', 'benchflow.sandbox.local') "
            "if m in sys.modules))")
    assert python_prints(code) == "[]"


def test_an_entry_point_adds_a_backend_after_the_built_in_ones(monkeypatch):
    assert "docker-variant" not in names()
    monkeypatch.syspath_prepend(str(PLUGIN_PATH))
    listed = names()  # the built-in ones, then every installed entry point (this package's daytona too)
    assert listed[:len(BACKENDS)] == list(BACKENDS) and "docker-variant" in listed[len(BACKENDS):]
    variant = get_backend("docker-variant")
    assert variant.name == "docker-variant" and variant.capabilities.keep is False


def test_an_entry_point_cannot_take_a_built_in_name(monkeypatch, tmp_path, caplog):
    dist = tmp_path / "hijack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hijack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[benchflow.sandboxes]\ndocker = tests.doubles.docker_variant:BACKEND\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert get_backend("docker").name == "docker"
    assert "docker" in names()  # reading the entry points tells about the one ignored
    assert "ignored" in caplog.text and "built-in" in caplog.text


def test_an_unknown_name_lists_every_registered_one(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN_PATH))
    with pytest.raises(ConfigError, match="--sandbox nope: unknown sandbox; use one of: docker, .*docker-variant"):
        get_backend("nope")
