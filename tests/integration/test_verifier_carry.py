"""The verifier's folder reaches the sandbox whole, whether the fence carries it (small) or it is
uploaded after the fence (over the carry limit): nested folders, executable helpers, big data."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from benchflow.verify.fence import CARRY_MAX_BYTES
from tests.conftest import run_bench
from tests.taskgen import WRITE_HELLO, make_task

# the helper must still be executable, the data whole, and the solution in place
CHECK = ('[ "$(cat /app/hello.txt)" = hello ] && [ "$(wc -c < /verifier/data.bin)" = "$(cat /verifier/size)" ] '
         '&& /verifier/sub/helper.sh && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')


def _task(root: Path, name: str, size: int) -> None:
    task = make_task(root, name, solve=WRITE_HELLO, test=CHECK)
    (task / "verifier" / "data.bin").write_bytes(b"x" * size)
    (task / "verifier" / "size").write_text(f"{size}\n")
    helper = task / "verifier" / "sub" / "helper.sh"
    helper.parent.mkdir()
    helper.write_text("#!/bin/sh\nexit 0\n")
    helper.chmod(0o755)


@pytest.mark.docker
def test_small_and_large_verifier_folders_both_arrive_whole(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    _task(tasks, "small", 1000)
    _task(tasks, "large", CARRY_MAX_BYTES + 1)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tasks), "-s", "docker", "--jobs-dir", str(jobs), "-j", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    rewards = {json.loads(p.read_text())["task_name"]: json.loads(p.read_text())["rewards"]["reward"]
               for p in jobs.glob("*/*/result.json")}
    assert rewards == {"small": 1.0, "large": 1.0}


# a verifier that leaves nested files, an executable, a link inside, a link out and a FIFO behind, and
# (with BIG set) a file over the cap of what its exec sends back
LEAVE = ('mkdir -p /logs/verifier/sub && printf "line\\n" > /logs/verifier/sub/out.txt && '
         'printf "#!/bin/sh\\n" > /logs/verifier/run.sh && chmod 755 /logs/verifier/run.sh && '
         'ln -s sub/out.txt /logs/verifier/inside && ln -s /etc/passwd /logs/verifier/out && '
         'mkfifo /logs/verifier/fifo && { [ -z "$BIG" ] || head -c $BIG /dev/zero > /logs/verifier/big.bin; } && '
         'echo 1 > /logs/verifier/reward.txt')


def _archive_reads(since: float, task: str) -> int:
    """How many archive reads (copy-outs) the engine served for the containers of ``task`` since ``since``."""
    events = subprocess.run(["docker", "events", "--since", f"{since:.3f}", "--until", f"{time.time():.3f}",
                             "--filter", "event=archive-path", "--filter", f"label=benchflow.task={task}",
                             "--format", "{{.Actor.ID}}"], capture_output=True, text=True, check=True, timeout=60)
    return len(events.stdout.split())


def _listing(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): (f"link {p.readlink()}" if p.is_symlink() else "dir" if p.is_dir() else
                                             f"{p.stat().st_size} {oct(p.stat().st_mode & 0o777)}")
            for p in sorted(root.rglob("*"))}


@pytest.mark.docker
def test_the_verifiers_folder_comes_back_with_its_exec_as_a_copy_out_brings_it(tmp_path: Path) -> None:
    """A root verifier's exec sends /logs/verifier back (no copy-out of its own); what lands in the trial
    is what the engine's copy-out gives: the same files, modes and inside links, the link out and the FIFO
    dropped with a note. A folder over the cap of that archive is copied out as before, whole."""
    tasks = tmp_path / "tasks"
    make_task(tasks, "small", solve=WRITE_HELLO, test=LEAVE)
    make_task(tasks, "big", solve=WRITE_HELLO, test=f"BIG={CARRY_MAX_BYTES + 4096}; " + LEAVE)
    jobs = tmp_path / "jobs"
    since = time.time()
    done = run_bench("run", str(tasks), "-s", "docker", "--jobs-dir", str(jobs), "-j", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    trials = {json.loads(p.read_text())["task_name"]: p.parent for p in jobs.glob("*/*/result.json")}
    assert _archive_reads(since, "small") == 1  # /logs (the agent's logs and artifacts); the verifier's came back
    assert _archive_reads(since, "big") == 2    # /logs, then /logs/verifier: over the cap, copied out
    expected = {"inside": "link sub/out.txt", "reward.txt": "2 0o644", "run.sh": "10 0o755", "sub": "dir",
                "sub/out.txt": "5 0o644", "test-stdout.txt": "0 0o644"}
    assert _listing(trials["small"] / "verifier") == expected
    assert _listing(trials["big"] / "verifier") == {**expected, "big.bin": f"{CARRY_MAX_BYTES + 4096} 0o644"}
    for name in ("small", "big"):
        result = json.loads((trials[name] / "result.json").read_text())
        assert result["rewards"]["reward"] == 1.0
        dropped = {row["path"] for row in result["copy_out_info"]["verifier"]["dropped"]}
        assert dropped == {"out", "fifo"}, name


class _Counted:
    """A process whose stdout counts the bytes the host reads from it."""

    def __init__(self, process, seen: list[int]) -> None:
        self._process, self._seen = process, seen
        self.stdin, self.stderr = process.stdin, process.stderr
        self.stdout = self

    async def read(self, n: int = -1) -> bytes:
        data = await self._process.stdout.read(n)
        self._seen[0] += len(data)
        return data

    async def wait(self) -> int:
        return await self._process.wait()

    async def kill(self) -> None:
        await self._process.kill()


@pytest.mark.docker
async def test_a_verifier_folder_over_the_limit_is_not_streamed_back_through_its_exec(tmp_path: Path) -> None:
    """A verifier that leaves 40 MiB in /logs/verifier: its exec sends at most about the carry limit
    back (the rest would be read for nothing, on the verifier's own time), and the folder is left to
    the copy-out; the verifier's own result is as it ran."""
    import os

    from benchflow.sandbox import SandboxSpec, get_backend
    from benchflow.verify.fence import fence_then_run

    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
    verifier = tmp_path / "verifier"
    verifier.mkdir()
    (verifier / "test.sh").write_text("#!/bin/sh\nexit 0\n")
    spec = SandboxSpec(name="carry-back", environment_dir=env, cache_key="carry-back", network_mode="no-network",
                       labels={"benchflow.job": "carry-back", "benchflow.trial": f"carry-back-{os.getpid()}"})
    box = get_backend("docker").create(spec)
    await box.build()
    await box.start()
    seen = [0]
    opened = box.exec_stream

    async def counted(*args, **kwargs):
        return _Counted(await opened(*args, **kwargs), seen)

    box.exec_stream = counted
    try:
        argv = ["sh", "-c", "head -c 41943040 /dev/zero > /logs/verifier/big.bin; echo 1 > /logs/verifier/reward.txt; "
                            "exit 3"]
        report, result, logs = await fence_then_run(box, argv, env={}, cwd="/app", timeout=120, agent_user=None,
                                                    link_tests=False, verifier_dir="/verifier", workdir="/app",
                                                    cleanup_conftests=False, carry=verifier)
        assert report.uploaded and result is not None and result.return_code == 3 and not result.timed_out
        assert logs is None  # over the limit: the copy-out brings it
        assert seen[0] <= CARRY_MAX_BYTES + (64 << 10), seen[0]
    finally:
        await box.stop()
