"""``bench sandbox list|cleanup`` and ``bench cache list|clean`` on what the ``local`` backend leaves.

Every ``bench`` call here points at a Docker socket that does not exist, so
only this test's local cache (``BENCHFLOW_CACHE``) is listed and cleaned, and
the no-engine path of the commands is exercised on the way.
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, get_backend
from tests.conftest import host_processes_with

pytestmark = pytest.mark.local_sandbox

ROOT = Path(__file__).resolve().parents[2]
_SERIAL = itertools.count()

OWNER = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from benchflow.sandbox import SandboxSpec, get_backend

    async def main():
        job, marker, env_dir = sys.argv[1], sys.argv[2], sys.argv[3]
        spec = SandboxSpec(name="left-behind", environment_dir=Path(env_dir) if env_dir else None,
                           cache_key=f"owner-{marker}", labels={"benchflow.job": job})
        box = get_backend("local").create(spec)
        await box.start()
        proc = await box.exec_stream(["sleep", marker])
        print(box.sandbox_id, flush=True)
        await proc.wait()

    asyncio.run(main())
""")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("BENCHFLOW_CACHE", str(root))
    yield root
    from benchflow.sandbox.local.state import sweep

    for state in (root / "local" / "sandboxes").glob("*"):
        sweep(state)  # what a test left on purpose (another job's leftover) must not outlive it


@pytest.fixture
def run(bench, cache):
    """``bench`` against this test's cache only (no Docker engine answers)."""
    env = {"BENCHFLOW_CACHE": str(cache), "DOCKER_HOST": "unix:///nonexistent/bf-test-docker.sock",
           "BENCHFLOW_REMOTE_DOCKER_HOST": "", "BENCHFLOW_PODMAN_HOST": ""}

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return bench(*args, env=env)

    return call


async def _until(check, what: str, tries: int = 100):
    for _ in range(tries):
        if value := check():
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def killed_owner(cache: Path, job: str, env_dir: Path | None = None) -> tuple[str, bytes]:
    """Start a local sandbox running ``sleep`` in a child process, then SIGKILL the child.

    Returns the sandbox id and a needle naming its ``sleep`` in /proc. The
    sandbox's processes usually die with their owner; a kill that lands just
    after an exec started can leave its namespace init running, which is
    what cleanup's sweep is for.
    """
    marker = f"271.{os.getpid()}{next(_SERIAL):03d}"  # sleep seconds unique to this test process
    needle = f"sleep\x00{marker}".encode()
    child = subprocess.Popen([sys.executable, "-c", OWNER, job, marker, str(env_dir or "")],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT,
                             env={**os.environ, "BENCHFLOW_CACHE": str(cache)})
    try:
        sandbox_id = child.stdout.readline().strip()
        assert sandbox_id, "the child did not start its sandbox"
        await _until(lambda: host_processes_with(needle), "the sandbox's sleep")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert (cache / "local" / "sandboxes" / sandbox_id / "owner.json").is_file(), "the kill left the folder"
    return sandbox_id, needle


@pytest.fixture
async def live_sandbox(cache):
    boxes = []

    async def start(name: str = "live-one", env_dir: Path | None = None, key: str = "live", job: str = "job-live"):
        box = get_backend("local").create(SandboxSpec(name=name, environment_dir=env_dir, cache_key=key,
                                                      labels={"benchflow.job": job}))
        boxes.append(box)
        await box.start()
        return box

    yield start
    for box in boxes:
        await box.stop()


async def test_list_shows_a_killed_owners_sandbox_as_orphan_and_cleanup_removes_only_it(cache, run, live_sandbox):
    orphan, needle = await killed_owner(cache, "job-dead")
    live = await live_sandbox()
    sandboxes = cache / "local" / "sandboxes"

    listed = run("sandbox", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "skipped docker" in listed.stderr.lower()
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {orphan, live.sandbox_id}
    assert rows[orphan]["engine"] == "local" and rows[orphan]["owner_alive"] is False
    assert rows[orphan]["owner"].startswith("gone (pid ") and rows[orphan]["job"] == "job-dead"
    assert rows[orphan]["task"] == "left-behind" and rows[orphan]["state"] == "stale"
    assert rows[live.sandbox_id]["owner"] == f"live pid {os.getpid()}"
    table = run("sandbox", "list")
    assert orphan in table.stdout and "gone (pid" in table.stdout and "SANDBOX" in table.stdout

    dry = run("sandbox", "cleanup", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"Would remove local sandbox {orphan}: orphan" in dry.stdout
    assert (sandboxes / orphan).is_dir(), "--dry-run removes nothing"

    cleaned = run("sandbox", "cleanup")
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"Removed local sandbox {orphan}" in cleaned.stdout
    assert f"Kept local sandbox {live.sandbox_id}: held by a live run" in cleaned.stdout
    assert not (sandboxes / orphan).exists()
    await _until(lambda: not host_processes_with(needle), "no process of the orphan to survive cleanup")
    assert (await live.exec(["echo", "still here"])).stdout == "still here\n"

    everything = run("sandbox", "cleanup", "--all", "--json")
    report = json.loads(everything.stdout)
    assert report["removed"] == [] and [e["id"] for e in report["kept"]] == [live.sandbox_id]

    named = run("sandbox", "cleanup", "--id", live.sandbox_id)
    assert named.returncode == 0, named.stderr
    assert f"Removed local sandbox {live.sandbox_id}: named with --id" in named.stdout
    assert not live.state_dir.exists()


async def test_a_new_run_of_the_job_removes_only_its_own_leftovers(cache, live_sandbox):
    from benchflow.sandbox import get_backend
    from benchflow.sandbox.orphans import reap

    mine, needle = await killed_owner(cache, "/jobs/this-job")
    other, _ = await killed_owner(cache, "/jobs/other-job")
    live = await live_sandbox(job="/jobs/this-job")
    await asyncio.to_thread(reap, get_backend("local"), "/jobs/this-job")
    sandboxes = cache / "local" / "sandboxes"
    assert not (sandboxes / mine).exists()
    await _until(lambda: not host_processes_with(needle), "no process of the leftover to survive")
    assert (sandboxes / other).is_dir(), "another job's leftover is not this run's to remove"
    assert live.state_dir.is_dir(), "a live sandbox of the same job stays"


def _environment(root: Path, line: str) -> Path:
    env = root / "environment"
    env.mkdir(parents=True)
    (env / "Dockerfile").write_text(f"FROM benchflow/python:3.11-bookworm\n{line}\n")
    return env


@pytest.mark.skipif(os.geteuid() != 0, reason="local RUN layers need root (overlayfs)")
async def test_cache_lists_local_layers_and_removes_only_idle_ones(cache, run, live_sandbox, tmp_path):
    used = await live_sandbox("uses-layer", _environment(tmp_path / "a", "RUN echo a > /opt/bf-a"), key="layer-a")
    idle = await live_sandbox("idle-layer", _environment(tmp_path / "b", "RUN echo b > /opt/bf-b"), key="layer-b")
    await idle.stop()
    images = cache / "local" / "images"
    # a build killed halfway leaves its work folder behind
    seconds = f"300.{os.getpid()}"
    slow = _environment(tmp_path / "c", f"RUN sleep {seconds}")
    child = subprocess.Popen([sys.executable, "-c", OWNER, "job-build", "1", str(slow)], cwd=ROOT,
                             env={**os.environ, "BENCHFLOW_CACHE": str(cache)}, stdout=subprocess.DEVNULL)
    try:
        [unfinished] = await _until(lambda: list(images.glob("*.tmp-*")), "the build's work folder", tries=400)
        await _until(lambda: host_processes_with(f"sleep\x00{seconds}".encode()), "the RUN step", tries=400)
    finally:
        child.kill()
        child.wait(10)
    layer_a = json.loads((used.state_dir / "owner.json").read_text())["image"]
    layer_b = next(p.name for p in images.iterdir() if p.is_dir() and p.name != layer_a and ".tmp-" not in p.name)

    listed = run("cache", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {layer_a, layer_b, unfinished.name}
    assert rows[layer_a]["kind"] == "images" and rows[layer_a]["engine"] == "local"
    assert rows[layer_a]["ref"] == "benchflow/python:3.11-bookworm (local layer)"
    assert rows[layer_a]["in_use_by"] == [f"{used.sandbox_id} (live pid {os.getpid()})"]
    assert rows[layer_b]["in_use_by"] == [] and rows[layer_b]["size_bytes"] > 0
    assert rows[unfinished.name]["kind"] == "build-cache"
    only = json.loads(run("cache", "list", "--only", "build-cache", "--json").stdout)
    assert [row["id"] for row in only] == [unfinished.name]
    assert json.loads(run("cache", "list", "--older-than", "1d", "--json").stdout) == []
    assert "(local layer)" in run("cache", "list").stdout

    with open(images / f"{unfinished.name.split('.tmp-')[0]}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as a builder of that key holds it
        dry = json.loads(run("cache", "clean", "--json").stdout)
    actions = {e["id"]: (e["action"], e["reason"]) for e in dry["entries"]}
    assert actions[layer_a] == ("kept", f"used by {used.sandbox_id} (live pid {os.getpid()})")
    assert actions[layer_b] == ("would remove", "idle")
    assert actions[unfinished.name] == ("kept", "used by a build in progress")
    assert (images / layer_b).is_dir(), "without --remove nothing goes"

    removed = run("cache", "clean", "--remove", "--json")
    assert removed.returncode == 0, removed.stderr
    actions = {e["id"]: e["action"] for e in json.loads(removed.stdout)["entries"]}
    assert actions == {layer_a: "kept", layer_b: "removed", unfinished.name: "removed"}
    assert not (images / layer_b).exists() and not unfinished.exists()
    assert (images / layer_a / "image.json").is_file()
    assert (await used.exec(["cat", "/opt/bf-a"])).stdout == "a\n", "the layer in use still serves its sandbox"

    await used.stop()
    last = run("cache", "clean", "--remove", "--only", "images", "--sandbox", "local")
    assert last.returncode == 0, last.stderr
    assert not (images / layer_a).exists()
    assert sorted(p.name for p in images.iterdir() if p.is_dir()) == []
