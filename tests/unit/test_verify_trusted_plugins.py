"""The verifier's pytest keeps plugin autoloading off, yet loads the plugins installed root-owned.

Real pytest in a subprocess, with a plugin installed as a distribution (dist-info with a
``pytest11`` entry point) that adds a ``--marker-out`` option, the way pytest-json-ctrf adds
``--ctrf``. The verifier's pinned environment is used as is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchflow.categories import classify_verifier_error
from benchflow.verify.environment import PLUGIN_MODULE, pinned_env
from benchflow.verify.runner import environment_fault

TRUSTED = Path(__file__).resolve().parents[2] / "src" / "benchflow" / "verify" / "trusted_plugins.py"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="ownership checks need root, as verifiers run")

PLUGIN = '''
def pytest_addoption(parser):
    parser.addoption("--marker-out")

def pytest_sessionfinish(session):
    out = session.config.getoption("--marker-out")
    if out:
        open(out, "w").write("plugin ran")
'''


def _install(site: Path) -> None:
    site.mkdir(mode=0o755)
    (site / "marker_plugin.py").write_text(PLUGIN)
    info = site / "marker_plugin-1.0.dist-info"
    info.mkdir(mode=0o755)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: marker-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nmarker = marker_plugin\n")


def _run_pytest(tmp_path: Path, site: Path) -> subprocess.CompletedProcess[str]:
    plugins = tmp_path / "plugins"
    plugins.mkdir(mode=0o755, exist_ok=True)
    shutil.copyfile(TRUSTED, plugins / f"{PLUGIN_MODULE}.py")
    (tmp_path / "test_it.py").write_text("def test_ok():\n    assert True\n")
    env = pinned_env({}, verifier_dir=str(tmp_path), workdir=str(tmp_path))
    env["PYTHONPATH"] = f"{plugins}:{site}"  # the sandbox's folder, and a site-packages stand-in
    env["PATH"] = os.environ["PATH"]
    return subprocess.run([sys.executable, "-m", "pytest", str(tmp_path / "test_it.py"), "--marker-out",
                           str(tmp_path / "out.txt")], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


def test_a_root_owned_plugin_loads_with_autoload_off(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    site = tmp_path / "site"
    _install(site)
    done = _run_pytest(tmp_path, site)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out.txt").read_text() == "plugin ran"


def test_a_plugin_in_a_folder_others_can_write_is_not_loaded(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    site = tmp_path / "site"
    _install(site)
    os.chmod(site, 0o777)  # an agent could have planted it
    done = _run_pytest(tmp_path, site)
    assert done.returncode == 4
    assert not (tmp_path / "out.txt").exists()
    verifier = tmp_path / "verifier"
    verifier.mkdir()
    (verifier / "test-stdout.txt").write_text(done.stdout + done.stderr)
    fault = environment_fault(verifier)
    assert fault is not None and fault.startswith("verifier crashed: PluginGuardLoadError: pytest plugin marker at ")
    assert classify_verifier_error(fault) == "verifier_plugin_trust"


def test_a_usage_error_without_a_refused_plugin_is_a_verifier_failure(tmp_path: Path) -> None:
    (tmp_path / "test-stdout.txt").write_text(
        "+ pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py\n"
        "ERROR: usage: pytest [options] [file_or_dir] [file_or_dir] [...]\n"
        "pytest: error: unrecognized arguments: --ctrf /logs/verifier/ctrf.json\n  inifile: /dev/null\n")
    fault = environment_fault(tmp_path)
    assert "unrecognized arguments: --ctrf" in fault
    assert classify_verifier_error(fault) == "verifier_failure"
    (tmp_path / "test-stdout.txt").write_text("1 failed, 3 passed\n")
    assert environment_fault(tmp_path) is None
