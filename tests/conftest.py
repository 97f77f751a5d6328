"""Shared fixtures: engine detection and the subprocess ``bench`` runner."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_TASKS = ROOT / "tests" / "fixtures" / "tasks"
EXAMPLE_TASKS = ROOT / "examples" / "tasks"


def _docker_answers() -> tuple[bool, str]:
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
        return True, ""
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine"
        return False, f"no Docker engine answers ({type(exc).__name__}); run scripts/docker-engine.sh"


def _namespaces_work() -> tuple[bool, str]:
    for tool in ("bwrap", "unshare"):
        if shutil.which(tool):
            probe = [tool, "--ro-bind", "/", "/", "true"] if tool == "bwrap" else [tool, "--user", "--map-root-user", "true"]
            if subprocess.run(probe, capture_output=True).returncode == 0:
                return True, ""
    return False, "Linux namespaces are not available here (no working bwrap or unshare)"


def _requirement(marker: str, check) -> None:
    ok, reason = check()
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{marker}: {reason} (CI is set, so this fails instead of skipping)")
    pytest.skip(reason)


_cache: dict[str, tuple[bool, str]] = {}


@pytest.fixture(autouse=True)
def _environment_requirements(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("docker"):
        _requirement("docker", lambda: _cache.setdefault("docker", _docker_answers()))
    if request.node.get_closest_marker("local_sandbox"):
        _requirement("local_sandbox", lambda: _cache.setdefault("ns", _namespaces_work()))


def run_bench(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
              input: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``bench`` as a user types it; returns the completed process (text mode)."""
    full_env = dict(os.environ)
    full_env["COLUMNS"] = "200"  # whatever width the runner has (pytest-xdist workers report 80)
    full_env["NO_COLOR"] = "1"
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "benchflow.cli", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, input=input, timeout=timeout)


@pytest.fixture
def bench():
    return run_bench


def host_processes_with(needle: bytes | str) -> list[int]:
    """Pids of host processes whose command line contains ``needle`` (e.g. ``b"sleep\x00317.42"``)."""
    needle = needle.encode() if isinstance(needle, str) else needle
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found
