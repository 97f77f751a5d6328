"""Docker-specific container shape, networks, keeping, and orphan cleanup after kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox import docker_engine as eng
from benchflow.sandbox.orphans import cleanup, scan
from tests.waiting import wait_until


pytestmark = pytest.mark.docker


def list_owned():
    return get_backend("docker").leftovers()


def docker_found():
    return scan([get_backend("docker")]).found

ROOT = Path(__file__).resolve().parents[2]


def prebuilt(name: str, **overrides) -> SandboxSpec:
    fields = dict(name=name, environment_dir=None, cache_key="prebuilt", image="debian:bookworm-slim",
                  network_mode="no-network", cpus=0.5, memory_mb=256,
                  labels={eng.JOB: "job-x", eng.TRIAL: f"{name}-{os.getpid()}"})
    fields.update(overrides)
    return SandboxSpec(**fields)


async def test_container_has_labels_limits_init_and_no_network():
    box = get_backend("docker").create(prebuilt("shape"))
    await box.start()
    try:
        info = box.api.inspect_container(box.sandbox_id)
        labels = info["Config"]["Labels"]
        assert labels[eng.OWNED] == "true" and labels[eng.JOB] == "job-x"
        assert labels[eng.TRIAL] == f"shape-{os.getpid()}"
        assert labels[eng.PID] == str(os.getpid()) and labels[eng.HOST]
        assert labels[eng.PID_START] == eng.process_start_ticks(os.getpid())
        assert labels[eng.CREATED]
        host = info["HostConfig"]
        assert host["Init"] is True
        assert host["NetworkMode"] == "none"
        assert host["NanoCpus"] == 500_000_000 and host["Memory"] == 256 << 20
        assert box.workdir == "/root"  # the image has no WORKDIR
        started = time.monotonic()
    finally:
        await box.stop()
    assert time.monotonic() - started < 5, "removal must not wait out a stop grace period"


async def test_root_sandbox_user_creates_no_account():
    box = get_backend("docker").create(prebuilt("rootonly", sandbox_user=None))
    await box.start()
    try:
        result = await box.exec(["sh", "-c", "grep -c '^agent:' /etc/passwd || true"])
        assert result.stdout.strip() == "0"
    finally:
        await box.stop()


async def test_public_network_without_a_bridge_runs_isolated_with_a_note(monkeypatch):
    monkeypatch.delenv(eng.PUBLIC_NETWORK_ENV, raising=False)
    backend = get_backend("docker")
    if eng.facts(None).has_bridge:
        pytest.skip("this engine has a bridge network, so public tasks get it")
    assert backend.capabilities.network_for("public") == "no-network"
    box = backend.create(prebuilt("public", network_mode="public"))
    await box.start()
    try:
        assert box.network_note and eng.PUBLIC_NETWORK_ENV in box.network_note
        assert box.api.inspect_container(box.sandbox_id)["HostConfig"]["NetworkMode"] == "none"
    finally:
        await box.stop()


async def test_kept_sandbox_survives_stop_and_cleanup():
    box = get_backend("docker").create(prebuilt("kept"))
    await box.start()
    record = await box.keep()
    try:
        assert record["sandbox_id"] == box.sandbox_id and record["backend"] == "docker"
        await box.stop()
        assert box.api.inspect_container(box.sandbox_id)["State"]["Running"]
        report = cleanup(docker_found(), max_age_sec=0, dry_run=True)
        assert box.sandbox_id not in {entry["id"] for entry in report.removed}
    finally:
        box.api.remove_container(box.sandbox_id, force=True)


CHILD = """
import asyncio, sys
from benchflow.sandbox import SandboxSpec, get_backend
spec = SandboxSpec(name="orphan", environment_dir=None, cache_key="x", image="debian:bookworm-slim",
                   network_mode="no-network", labels={"benchflow.trial": sys.argv[1]})
async def main():
    box = get_backend("docker").create(spec)
    await box.start()
    print(box.sandbox_id, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


async def test_cleanup_removes_what_a_killed_process_left_and_spares_live_runs(bench):
    live = get_backend("docker").create(prebuilt("live"))
    await live.start()
    child = subprocess.Popen([sys.executable, "-c", CHILD, f"orphan-{os.getpid()}"], stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    try:
        orphan_id = child.stdout.readline().strip()
        assert orphan_id, "the child process did not start its sandbox"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        rows = {row.id: row for row in list_owned()}
        assert rows[orphan_id].owner_alive is False
        assert rows[live.sandbox_id].owner_alive is True
        result = bench("sandbox", "cleanup")
        assert result.returncode == 0, result.stderr
        assert orphan_id[:12] in result.stdout
        ids = {row.id for row in list_owned()}
        assert orphan_id not in ids
        assert live.sandbox_id in ids, "a live run's sandbox must not be touched"
    finally:
        if child.poll() is None:
            child.kill()
        await live.stop()


DISCARDING = """
import asyncio, os, sys
from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.base import discard
spec = SandboxSpec(name="discarded", environment_dir=None, cache_key="x", image="debian:bookworm-slim",
                   network_mode="no-network", labels={"benchflow.trial": sys.argv[1]})
async def main():
    box = get_backend("docker").create(spec)
    await box.start()
    print(box.sandbox_id, flush=True)
    await discard(box)
    await box.stop()  # safe afterwards, and a no-op
asyncio.run(main())
os._exit(0)  # at once: nothing waits for the engine's answer
"""


def test_a_discarded_sandbox_goes_even_when_its_process_exits_at_once():
    child = subprocess.run([sys.executable, "-c", DISCARDING, f"discarded-{os.getpid()}"], capture_output=True,
                           text=True, cwd=ROOT, timeout=120)
    assert child.returncode == 0, child.stderr
    sandbox_id = child.stdout.strip()
    assert sandbox_id
    wait_until(lambda: not get_backend("docker").exists(sandbox_id), what="the engine to remove the container")


def test_an_unowned_container_goes_only_after_max_age():
    api = eng.client()
    labels = eng.owner_labels({eng.TRIAL: "unowned"})
    for key in (eng.PID, eng.PID_START, eng.HOST):
        labels.pop(key)
    created = api.create_container("debian:bookworm-slim", command=["true"], labels=labels)["Id"]
    try:
        young = cleanup(docker_found(), max_age_sec=3600, dry_run=True)
        assert created not in {e["id"] for e in young.removed}
        assert any(e["id"] == created and "younger" in e["reason"] for e in young.kept)
        old = cleanup(docker_found(), max_age_sec=0, dry_run=True)
        assert created in {e["id"] for e in old.removed}
        named = cleanup(docker_found(), max_age_sec=3600, ids=[created[:12]])
        assert [e["id"] for e in named.removed] == [created]
    finally:
        from benchflow.sandbox.engine_api import NotFound

        try:
            api.remove_container(created, force=True)
        except NotFound:
            pass


@pytest.mark.parametrize("overrides,message", [
    ({"sandbox_user": "bad:user"}, "setup failed"),
    ({"workdir": "/proc/not-allowed"}, "did not start"),
])
async def test_a_start_that_fails_raises_and_removes_the_container(overrides, message):
    from benchflow.sandbox.engine_api import NotFound

    from benchflow.errors import SandboxError

    box = get_backend("docker").create(prebuilt("badstart", **overrides))
    with pytest.raises(SandboxError, match=message):
        await box.start()
    with pytest.raises(NotFound):
        box.api.inspect_container(box.sandbox_id)


GONE_BUILDER = ("import json, sys\nfrom benchflow.sandbox import docker_engine as eng\n"
                "print(json.dumps(eng.owner_labels({eng.BACKEND: 'docker'}, kind='image')))")


def test_cleanup_leaves_a_build_on_top_of_one_of_our_images_alone(bench, tmp_path):
    """The engine gives a build step's container the labels of the image it starts from: an agent layer
    built on a task image carries the image's owner labels (a builder process long gone) while its
    install runs. Cleanup must not take it for a killed run's sandbox (it once killed such installs: 137)."""
    labels = json.loads(subprocess.run([sys.executable, "-c", GONE_BUILDER], capture_output=True, text=True,
                                       cwd=ROOT, check=True).stdout)
    base = f"benchflow/lifecycle-base:{os.getpid()}"
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    subprocess.run(["docker", "build", "-q", "-t", base, *[f"--label={k}={v}" for k, v in labels.items()],
                    str(tmp_path / "base")], check=True, capture_output=True, env={**os.environ, "DOCKER_BUILDKIT": "0"})
    (tmp_path / "layer").mkdir()
    (tmp_path / "layer" / "Dockerfile").write_text(f"FROM {base}\nRUN sleep 120\n")
    build = subprocess.Popen(["docker", "build", "-q", str(tmp_path / "layer")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env={**os.environ, "DOCKER_BUILDKIT": "0"})
    try:
        def step() -> str:
            found = subprocess.run(["docker", "ps", "-q", "--no-trunc", "--filter", f"ancestor={base}",
                                    "--filter", "label=benchflow.kind=image"], capture_output=True, text=True)
            return found.stdout.strip()

        wait_until(lambda: bool(step()), 60, what="the build's RUN step to start")
        running = step()
        assert running not in {row.id for row in list_owned()}
        result = bench("sandbox", "cleanup")
        assert result.returncode == 0, result.stderr
        assert step() == running and build.poll() is None, "cleanup stopped the build's step"
    finally:
        build.kill()
        build.wait(30)
        leftover = subprocess.run(["docker", "ps", "-aq", "--filter", f"ancestor={base}"], capture_output=True,
                                  text=True).stdout.split()
        subprocess.run(["docker", "rm", "-f", *leftover], capture_output=True)
        subprocess.run(["docker", "rmi", "-f", base], capture_output=True)
