"""A backend from an installed package (the test-only ``docker-variant``, registered only through a
``benchflow.sandboxes`` entry point) in ``bench doctor``, ``bench cache`` and ``bench sandbox
list|cleanup``, after the process that made its sandbox was killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.doubles.docker_variant import PLUGIN_PATH

pytestmark = pytest.mark.docker

INSTALLED = {"PYTHONPATH": os.pathsep.join([str(PLUGIN_PATH), str(ROOT), os.environ.get("PYTHONPATH", "")])}

CHILD = """
import asyncio, sys
from benchflow.sandbox import SandboxSpec, get_backend
spec = SandboxSpec(name="plugin-orphan", environment_dir=None, cache_key="x", image="debian:bookworm-slim",
                   network_mode="no-network", labels={"benchflow.trial": sys.argv[1]})
async def main():
    box = get_backend("docker-variant").create(spec)
    await box.start()
    print(box.sandbox_id, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


def test_doctor_checks_an_installed_backend_as_any_other(bench):
    result = bench("doctor", "--offline", "--json", "--sandbox", "docker-variant", env=INSTALLED)
    assert result.returncode == 0, result.stdout + result.stderr
    checks = {(c["group"], c["name"]): c for c in json.loads(result.stdout)["checks"]}
    variant = checks[("sandbox", "docker-variant")]
    assert variant["required"] and variant["status"] == "ok" and "Docker engine" in variant["detail"]
    plain = bench("doctor", "--offline", "--sandbox", "docker-variant")
    assert plain.returncode == 2 and "--sandbox docker-variant: unknown sandbox" in plain.stderr


def test_cache_lists_an_installed_backend_s_images(bench):
    listed = bench("cache", "list", "--json", "--sandbox", "docker-variant", env=INSTALLED)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert rows and {row["kind"] for row in rows} <= {"images", "build-cache"}
    # it shares the local engine with docker: the same store, listed once when both are asked
    both = json.loads(bench("cache", "list", "--json", "--sandbox", "docker", "--sandbox", "docker-variant",
                            env=INSTALLED).stdout)
    assert sorted(r["id"] for r in both) == sorted(r["id"] for r in rows)


def test_a_killed_run_s_sandbox_is_listed_and_cleaned_up(bench):
    trial = f"plugin-killed-{os.getpid()}"
    child = subprocess.Popen([sys.executable, "-c", CHILD, trial], stdout=subprocess.PIPE, text=True,
                             env=os.environ | INSTALLED, cwd=ROOT)
    sandbox_id = ""
    try:
        sandbox_id = child.stdout.readline().strip()
        assert sandbox_id, "the child process did not start its sandbox"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        listed = json.loads(bench("sandbox", "list", "--json", env=INSTALLED).stdout)
        rows = [row for row in listed if row["id"] == sandbox_id]
        assert [(r["sandbox"], r["trial"], r["owner_alive"]) for r in rows] == [("docker-variant", trial, False)]
        cleaned = bench("sandbox", "cleanup", env=INSTALLED)
        assert cleaned.returncode == 0, cleaned.stderr
        assert f"({sandbox_id[:12]}): orphan" in cleaned.stdout
        after = json.loads(bench("sandbox", "list", "--json", env=INSTALLED).stdout)
        assert sandbox_id not in {row["id"] for row in after}
    finally:
        if child.poll() is None:
            child.kill()
        if sandbox_id:
            bench("sandbox", "cleanup", "--id", sandbox_id, env=INSTALLED)  # after a failure only; harmless
