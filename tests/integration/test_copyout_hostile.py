"""Hostile content planted in /logs comes out through each backend's real ``get`` without reaching the host.

An agent (here: root in the sandbox) plants links to a host file, a FIFO, a
device node, a set-uid file, a world-writable folder and a file over the cap
in /logs/agent and /logs/verifier. After ``get``: no link leads out of the job
folder, nothing special or set-id is there, modes are fixed, the big file is
cut, the report names every drop, and the host file's content is nowhere in the
copy (read following links, as a careless reader would).
"""

from __future__ import annotations

import importlib.util
import os
import stat
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, copyout, get_backend
from benchflow.verify.rewards import parse_reward_files

BASE = "benchflow/python:3.11-bookworm"
SECRET = "host-secret-value-4242"
CAP = 1 << 20


@pytest.fixture(params=[
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("local", marks=pytest.mark.local_sandbox),
])
def backend_name(request, monkeypatch, tmp_path) -> str:
    if request.param == "local":
        if importlib.util.find_spec("benchflow.sandbox.local") is None:
            pytest.skip("benchflow.sandbox.local is not part of this build")
        monkeypatch.setenv("BENCHFLOW_CACHE", str(tmp_path / "cache"))
    return request.param


@pytest.fixture
async def sandbox(backend_name, tmp_path):
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text(f"FROM {BASE}\nWORKDIR /app\n")
    spec = SandboxSpec(name="copyout-hostile", environment_dir=env, cache_key=f"copyout-{backend_name}",
                       network_mode="no-network",
                       labels={"benchflow.job": "copyout", "benchflow.trial": f"copyout-{os.getpid()}"})
    box = get_backend(backend_name).create(spec)
    await box.start()
    try:
        yield box
    finally:
        await box.stop()


def _plant(host_file: Path) -> str:
    climb = "../" * 12 + str(host_file).lstrip("/")
    return f"""
set -e
for d in /logs/agent /logs/verifier; do
  mkdir -p $d/open && chmod 0777 $d $d/open
  ln -s {host_file} $d/abs
  ln -s {climb} $d/climb
  ln -s {host_file.parent} $d/hostdir
  mkfifo $d/fifo
  printf '#!/bin/sh\\n' > $d/tool && chmod 4755 $d/tool
  echo ok > $d/open/note.txt && chmod 0666 $d/open/note.txt
  ln -s open/note.txt $d/inside
  (mknod $d/null c 1 3 && chmod 0666 $d/null) 2>/dev/null || echo nomknod > /tmp/nomknod
done
ln -s {host_file} /logs/verifier/reward.txt
head -c {3 * CAP} /dev/zero > /logs/agent/huge.log
"""


def _grep_following_links(root: Path) -> list[str]:
    hits = []
    for folder, dirs, files in os.walk(root, followlinks=True):
        for name in files:
            path = Path(folder) / name
            try:
                if stat.S_ISREG(os.stat(path).st_mode) and SECRET.encode() in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                continue
    return hits


def _assert_safe(root: Path) -> None:
    real_root = os.path.realpath(root)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                assert os.path.realpath(path).startswith(real_root + os.sep), path
                continue
            assert stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode), f"{path} is a special file"
            assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IWGRP | stat.S_IWOTH), path
            expected = (0o755,) if stat.S_ISDIR(info.st_mode) else (0o644, 0o755)
            assert stat.S_IMODE(info.st_mode) in expected, (path, oct(info.st_mode))


async def test_planted_links_and_special_files_do_not_reach_the_host(sandbox, tmp_path, monkeypatch):
    host_file = tmp_path / "host" / "secret.txt"
    host_file.parent.mkdir()
    host_file.write_text(SECRET)
    monkeypatch.setattr(copyout, "DEFAULT_LIMITS", copyout.CopyLimits(file_bytes=CAP))
    planted = await sandbox.exec(["sh", "-c", _plant(host_file)])
    assert planted.success, planted.stderr
    no_mknod = (await sandbox.exec(["test", "-e", "/tmp/nomknod"])).success

    job = tmp_path / "job" / "trial"
    agent = await sandbox.get("/logs/agent", job / "agent")
    verifier = await sandbox.get("/logs/verifier", job / "verifier")

    _assert_safe(job)
    assert _grep_following_links(job) == []
    assert (job / "agent" / "inside").read_text() == "ok\n"
    assert stat.S_IMODE((job / "agent" / "tool").stat().st_mode) == 0o755
    for gone in ("abs", "climb", "hostdir", "fifo", "null"):
        assert not os.path.lexists(job / "agent" / gone) and not os.path.lexists(job / "verifier" / gone), gone
    assert not os.path.lexists(job / "verifier" / "reward.txt")
    assert parse_reward_files(job / "verifier") is None  # the link is not a reward, and no host text is read

    assert (job / "agent" / "huge.log").stat().st_size == CAP
    assert agent.note()["cut"] == [{"path": "huge.log", "size": 3 * CAP, "kept": CAP}]
    for report, extra in ((agent, set()), (verifier, {"reward.txt"})):
        dropped = {row["path"] for row in report.dropped}
        assert {"abs", "climb", "hostdir", "fifo"} | extra <= dropped
    if no_mknod:
        pytest.skip("the sandbox could not create a device node (no CAP_MKNOD); the other cases passed")
    assert "null" in {row["path"] for row in agent.dropped}


async def test_a_copy_over_the_per_copy_cap_stops_and_says_so(sandbox, tmp_path, monkeypatch):
    monkeypatch.setattr(copyout, "DEFAULT_LIMITS", copyout.CopyLimits(file_bytes=CAP, total_bytes=2 * CAP))
    done = await sandbox.exec(["sh", "-c", "mkdir -p /logs/agent && for i in 1 2 3 4 5 6; do "
                                           f"head -c {CAP // 2} /dev/zero > /logs/agent/part$i; done"])
    assert done.success, done.stderr
    report = await sandbox.get("/logs/agent", tmp_path / "agent")
    kept = sum(p.stat().st_size for p in (tmp_path / "agent").iterdir())
    assert kept <= 2 * CAP < 3 * CAP and report.stopped and "per-copy cap" in report.stopped


def _listing(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = (f"link {os.readlink(path)}" if path.is_symlink() else "dir" if path.is_dir() else
                    f"{path.stat().st_size} {oct(stat.S_IMODE(path.stat().st_mode))}")
    return out


async def test_the_agents_logs_and_artifacts_copied_together_come_out_as_each_copy_would(sandbox, tmp_path, monkeypatch):
    """``get_all`` of /logs/agent and /logs/artifacts (one archive of /logs on the engine) brings back what
    a ``get`` of each brings back, hostile content included; a child that is a link or is gone too."""
    from benchflow.sandbox.downloads import get_all

    host_file = tmp_path / "host" / "secret.txt"
    host_file.parent.mkdir()
    host_file.write_text(SECRET)
    monkeypatch.setattr(copyout, "DEFAULT_LIMITS", copyout.CopyLimits(file_bytes=CAP))
    planted = await sandbox.exec(["sh", "-c", _plant(host_file) + "mkdir -p /logs/artifacts/sub && "
                                  "echo made > /logs/artifacts/sub/out.txt && "
                                  "ln /logs/agent/tool /logs/artifacts/hard-to-agent && echo stray > /logs/stray"])
    assert planted.success, planted.stderr
    items = ["/logs/agent", "/logs/artifacts"]
    together = await get_all(sandbox, [(r, tmp_path / "one" / Path(r).name) for r in items])
    each = [await sandbox.get(r, tmp_path / "each" / Path(r).name) for r in items]
    assert _listing(tmp_path / "one") == _listing(tmp_path / "each")
    assert [r.note() for r in together] == [r.note() for r in each]
    assert (tmp_path / "one" / "artifacts" / "sub" / "out.txt").read_text() == "made\n"
    assert not (tmp_path / "one" / "verifier").exists() and not (tmp_path / "one" / "stray").exists()
    _assert_safe(tmp_path / "one")
    assert _grep_following_links(tmp_path / "one") == []

    relinked = await sandbox.exec(["sh", "-c", f"rm -rf /logs/artifacts && ln -s {host_file.parent} /logs/artifacts"])
    assert relinked.success, relinked.stderr
    agent, artifacts = await get_all(sandbox, [(r, tmp_path / "linked" / Path(r).name) for r in items])
    assert _listing(tmp_path / "linked" / "agent") == _listing(tmp_path / "each" / "agent")
    assert not os.path.lexists(tmp_path / "linked" / "artifacts") or _listing(tmp_path / "linked" / "artifacts") == {}
    assert _grep_following_links(tmp_path / "linked") == []

    gone = await sandbox.exec(["rm", "-rf", "/logs/artifacts"])
    assert gone.success
    agent, artifacts = await get_all(sandbox, [(r, tmp_path / "gone" / Path(r).name) for r in items])
    assert isinstance(artifacts, FileNotFoundError) and not (tmp_path / "gone" / "artifacts").exists()
    assert (tmp_path / "gone" / "agent" / "inside").read_text() == "ok\n"
