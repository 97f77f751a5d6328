"""The local sandbox without bubblewrap (util-linux ``unshare``), and what a killed owner leaves."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.local.state import list_sandboxes, remove_sandbox
from tests.conftest import host_processes_with

pytestmark = pytest.mark.local_sandbox


@pytest.fixture
def unshare_only(monkeypatch, cache):
    monkeypatch.setenv("BENCHFLOW_LOCAL_TOOL", "unshare")


def _sleeping(marker: bytes) -> list[int]:
    """The ``sleep`` processes themselves (not the namespace tools whose arguments name them)."""
    found = []
    for pid in host_processes_with(marker):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sleep":
                found.append(pid)
        except OSError:
            continue
    return found


async def test_probe_names_the_fallback(unshare_only):
    ok, reason = get_backend("local").available()
    assert ok, reason
    assert "unshare" in reason


async def test_unshare_sandbox_isolates_like_bwrap(unshare_only, tmp_path):
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM x\nWORKDIR /app\nRUN echo layered > /opt/bf-unshare-marker\n")
    spec = SandboxSpec(name="unshare", environment_dir=env, cache_key="u1", network_mode="no-network")
    sandbox = get_backend("local").create(spec)
    await sandbox.start()
    try:
        r = await sandbox.exec(["sh", "-c", "pwd; cat /opt/bf-unshare-marker; cat /proc/net/dev | tail -n +3 | "
                                            "cut -d: -f1 | tr -d ' '; cat; exit 5"], stdin=b"in\n")
        assert r.return_code == 5 and r.stdout.split() == ["/app", "layered", "lo", "in"], r.stderr
        assert (await sandbox.exec(["id", "-un"], user="agent")).stdout.strip() == "agent"
        made = await sandbox.exec(["sh", "-c", "echo k > /tmp/key && chmod 600 /tmp/key"])
        assert made.success
        assert (await sandbox.exec(["cat", "/tmp/key"], user="agent")).return_code != 0
        assert "Read-only" in (await sandbox.exec(["touch", "/usr/bf-x"])).stderr
        r = await sandbox.exec(["sh", "-c", "sleep 291.5 & sleep 291.5"], timeout=1)
        assert r.timed_out and r.return_code == 124
        await asyncio.sleep(0.2)
        assert host_processes_with(b"sleep\x00291.5") == []
        assert not os.path.exists("/opt/bf-unshare-marker")
    finally:
        await sandbox.stop()
    assert not sandbox.state_dir.exists()


OWNER = textwrap.dedent("""
    import asyncio, sys
    from benchflow.sandbox import SandboxSpec, get_backend

    async def main():
        box = get_backend("local").create(SandboxSpec(name="orphan", environment_dir=None, cache_key="o"))
        await box.start()
        proc = await box.exec_stream(["sleep", "283.5"])
        print(box.sandbox_id, flush=True)
        await proc.wait()

    asyncio.run(main())
""")


@pytest.mark.parametrize("tool", ["bwrap", "unshare"])
async def test_killed_owner_leaves_only_a_folder_that_cleanup_removes(cache, monkeypatch, tool):
    monkeypatch.setenv("BENCHFLOW_LOCAL_TOOL", tool)
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True,
                             env={**os.environ})
    sandbox_id = owner.stdout.readline().strip()
    assert sandbox_id
    for _ in range(50):
        if _sleeping(b"sleep\x00283.5"):
            break
        await asyncio.sleep(0.05)
    assert _sleeping(b"sleep\x00283.5")
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    for _ in range(50):
        if not host_processes_with(b"sleep\x00283.5"):
            break
        await asyncio.sleep(0.05)
    assert host_processes_with(b"sleep\x00283.5") == []
    [entry] = [e for e in list_sandboxes() if e["id"] == sandbox_id]
    assert entry["alive"] is False
    assert remove_sandbox(sandbox_id)
    assert not [e for e in list_sandboxes() if e["id"] == sandbox_id]


async def test_cleanup_kills_a_namespace_that_outlived_its_tool(cache):
    """The race a kill -9 during start-up can leave: the namespace init survives its bwrap."""
    spec = SandboxSpec(name="straggler", environment_dir=None, cache_key="s")
    box = get_backend("local").create(spec)
    await box.start()
    argv = box.command(["sleep", "257.5"])
    stray = subprocess.Popen(argv, start_new_session=True, pass_fds=box.pass_fds)  # not tracked by the sandbox
    try:
        for _ in range(50):
            if _sleeping(b"sleep\x00257.5"):
                break
            await asyncio.sleep(0.05)
        assert _sleeping(b"sleep\x00257.5")
        assert remove_sandbox(box.sandbox_id)
        assert stray.wait(timeout=5) != 0
        await asyncio.sleep(0.1)
        assert host_processes_with(b"sleep\x00257.5") == []
    finally:
        stray.kill()
        await box.stop()
