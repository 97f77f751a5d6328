"""``bench sandbox cleanup`` removes the snapshot images a ``kill -9`` of ``bench branch`` left (not retained,
their run gone), next to its containers; a dry run lists them and removes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURE_TASKS, ROOT
from tests.waiting import wait_until

import pytest

pytestmark = pytest.mark.docker


def _leftovers(job: Path) -> tuple[list[str], list[str]]:
    import docker

    client = docker.from_env()
    try:
        label = f"benchflow.job={job.resolve()}"
        containers = [c["Id"] for c in client.api.containers(all=True, filters={"label": label})]
        images = [t for i in client.api.images(filters={"label": [label, "benchflow.kind=snapshot"]})
                  for t in i["RepoTags"]]
        return containers, images
    finally:
        client.close()


def test_cleanup_removes_the_snapshots_a_killed_branch_left(bench, tmp_path: Path) -> None:
    args = ["branch", "--tasks-dir", str(FIXTURE_TASKS / "branch-prompts"), "--agent", "oracle", "--sandbox",
            "docker", "--jobs-dir", str(tmp_path), "--child", "label=slow,prompt=sleep 60",
            "--child", "label=other,prompt=write done"]
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", *args], cwd=ROOT, env={**os.environ},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        def slow_running() -> bool:
            found = list(tmp_path.glob("branch-*/*/branches/fork-0/children/slow/observation.json"))
            return bool(found) and json.loads(found[0].read_text())["status"] == "running"

        wait_until(slow_running, timeout=240, what="the slow child to start")
        job = next(tmp_path.glob("branch-*"))
        wait_until(lambda: all(_leftovers(job)), timeout=60, what="the child's container and the snapshot")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    containers, images = _leftovers(job)
    assert containers and images
    # only this job's leftovers are named, so other runs on this engine are not touched
    named = [a for ref in [*containers, *images] for a in ("--id", ref)]
    dry = bench("sandbox", "cleanup", "--dry-run", "--json", *named)
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)
    assert {e["id"] for e in listed["removed"] if e.get("kind") == "snapshot"} == set(images)
    assert _leftovers(job) == (containers, images)  # a dry run removes nothing
    done = bench("sandbox", "cleanup", *named)
    assert done.returncode == 0, done.stderr + done.stdout
    for image in images:
        assert f"Removed docker snapshot {image}: snapshot of a run that is gone" in done.stdout
    assert _leftovers(job) == ([], [])


SNAPSHOT_AND_RESTORE = """
import asyncio, sys
from pathlib import Path
from benchflow.sandbox import get_backend
from benchflow.sandbox.base import SandboxSpec

async def main():
    spec = SandboxSpec(name="sdk-free", environment_dir=Path(sys.argv[1]), cache_key="sdk-free-snapshot")
    box = get_backend("docker").create(spec)
    try:
        await box.build()  # the image is built before the check, so only the snapshot path counts
        for name in [m for m in sys.modules if m == "docker" or m.startswith("docker.")]:
            del sys.modules[name]  # any later use of the SDK imports it again
        await box.start()
        await box.exec(["sh", "-c", "echo kept > /srv/mark"])
        ref = await box.snapshot()
        await box.restore(ref)
        child = get_backend("docker").create(spec)
        await child.restore(ref)
        try:
            mark = (await child.exec(["cat", "/srv/mark"])).stdout.strip()
            print(mark, child.workdir, "docker" in sys.modules, ref)
        finally:
            await child.stop()
    finally:
        await box.stop()

asyncio.run(main())
"""


def test_a_snapshot_and_its_restores_go_without_the_docker_sdk(tmp_path: Path) -> None:
    """Issue 15: the commit, and the removal of the snapshot, are calls of our engine client: a fork
    pays no SDK import. The restored sandbox keeps the snapshot's working directory, and a process
    that stops its sandbox and exits at once leaves no snapshot behind."""
    import docker

    env_dir = tmp_path / "environment"
    env_dir.mkdir()
    (env_dir / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /srv\n")
    done = subprocess.run([sys.executable, "-c", SNAPSHOT_AND_RESTORE, str(env_dir)], cwd=ROOT, capture_output=True,
                          text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    *seen, ref = done.stdout.split()
    assert seen == ["kept", "/srv", "False"]
    # the snapshot's removal, finished in a thread after stop(), was waited for at the process's exit
    assert docker.from_env().api.images(filters={"reference": ref}) == []
