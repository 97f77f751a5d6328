"""One conformance suite every sandbox backend must pass (docker, remote-docker, local).

The remote-docker run talks to the second engine of ``scripts/docker-engine.sh
--remote`` (``unix:///run/benchflow-remote-docker.sock``) unless
``BENCHFLOW_REMOTE_DOCKER_HOST`` points elsewhere.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import socket
import stat
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, get_backend
from tests.conftest import host_processes_with

REMOTE_SOCKET = "unix:///run/benchflow-remote-docker.sock"
BASE = "benchflow/python:3.11-bookworm"


def _remote_url() -> str | None:
    url = os.environ.get("BENCHFLOW_REMOTE_DOCKER_HOST") or REMOTE_SOCKET
    from benchflow.sandbox.docker_engine import ping

    return url if ping(url, timeout=3)[0] else None


@pytest.fixture(params=[
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("remote-docker", marks=pytest.mark.docker),
    pytest.param("local", marks=pytest.mark.local_sandbox),
])
def backend_name(request, monkeypatch) -> str:
    name = request.param
    if name == "remote-docker":
        url = _remote_url()
        if url is None:
            reason = "no second engine answers; run scripts/docker-engine.sh --remote"
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
        monkeypatch.setenv("BENCHFLOW_REMOTE_DOCKER_HOST", url)
    if name == "local":
        if importlib.util.find_spec("benchflow.sandbox.local") is None:
            pytest.skip("benchflow.sandbox.local is not part of this build yet")
        # built layers go to a cache of this session, not to ~/.cache/benchflow
        monkeypatch.setenv("BENCHFLOW_CACHE", str(request.getfixturevalue("local_cache")))
    return name


@pytest.fixture(scope="session")
def local_cache(tmp_path_factory) -> Path:
    """One cache for the session's local runs, so the suite's base image is built once."""
    return tmp_path_factory.mktemp("local-cache")


def make_env(root: Path, run_line: str = "RUN date +%s%N > /opt/marker") -> Path:
    env = root / "environment"
    env.mkdir(parents=True, exist_ok=True)
    (env / "Dockerfile").write_text(f"FROM {BASE}\nWORKDIR /app\n{run_line}\n")
    return env


def make_spec(env: Path, key: str, **overrides) -> SandboxSpec:
    fields = dict(name=f"conf-{key}", environment_dir=env, cache_key=key, network_mode="no-network",
                  labels={"benchflow.job": "conformance", "benchflow.trial": f"conf-{os.getpid()}"})
    fields.update(overrides)
    return SandboxSpec(**fields)


@pytest.fixture
async def sandbox(backend_name, tmp_path):
    box = get_backend(backend_name).create(make_spec(make_env(tmp_path), f"base-{backend_name}"))
    await box.start()
    try:
        yield box
    finally:
        await box.stop()


def gone(backend_name: str, box, sandbox_id: str | None) -> bool:
    """Whether nothing of a stopped sandbox is left on the machine."""
    if backend_name == "local":
        return box.state_dir is None or not box.state_dir.exists()
    from docker.errors import NotFound

    try:
        box.api.inspect_container(sandbox_id)
    except NotFound:
        return True
    return False


async def test_build_cache_hit_and_miss_on_digest_change(backend_name, tmp_path):
    env = make_env(tmp_path)
    backend = get_backend(backend_name)
    key = f"cache-{os.getpid()}-{tmp_path.name}"

    async def marker(spec: SandboxSpec) -> str:
        box = backend.create(spec)
        await box.start()
        try:
            result = await box.exec(["cat", "/opt/marker"])
            assert result.return_code == 0, result.stderr
            return result.stdout
        finally:
            await box.stop()

    (env / "version.txt").write_text("v1\n")
    (env / "Dockerfile").write_text(f"FROM {BASE}\nCOPY version.txt /opt/marker\nRUN date +%s%N >> /opt/marker\n")
    first = await marker(make_spec(env, key))
    assert first.startswith("v1\n")
    assert first == await marker(make_spec(env, key)), "same digest must reuse the built image"
    (env / "version.txt").write_text("v2\n")
    assert (await marker(make_spec(env, key + "-changed"))).startswith("v2\n"), "a new digest must rebuild"


async def test_exec_reports_rc_streams_env_cwd_and_user(sandbox):
    result = await sandbox.exec(["sh", "-c", 'echo "out:$GREETING"; echo err >&2; pwd; exit 7'],
                                env={"GREETING": "hi"})
    assert (result.return_code, result.timed_out) == (7, False)
    assert result.stdout.splitlines() == ["out:hi", sandbox.workdir]
    assert result.stderr.strip() == "err"
    assert sandbox.workdir == "/app"
    assert (await sandbox.exec(["pwd"], cwd="/tmp")).stdout.strip() == "/tmp"
    assert (await sandbox.exec(["id", "-un"], user="agent")).stdout.strip() == "agent"
    assert (await sandbox.exec(["id", "-u"])).stdout.strip() == "0"
    listing = await sandbox.exec(["sh", "-c", "stat -c '%a %U' /logs/agent /logs/verifier /logs/artifacts"])
    assert listing.stdout.split() == ["777", "root"] * 3 or all(
        line.startswith("777") for line in listing.stdout.splitlines()), listing.stdout


async def test_exec_passes_stdin(sandbox):
    result = await sandbox.exec(["cat"], stdin=b"fed through stdin")
    assert result.stdout == "fed through stdin"


async def test_timeout_kills_the_whole_process_tree(backend_name, sandbox):
    seconds = [f"31{n}.{os.getpid()}" for n in (6, 7, 8, 9)]  # unique to this test process
    # a plain background child, one that left the session with setsid, and the foreground one
    script = (f"sleep {seconds[0]} & (setsid sleep {seconds[1]} &) ; sleep {seconds[2]} & "
              f"echo started; sleep {seconds[3]}")
    result = await sandbox.exec(["sh", "-c", script], timeout=1.5)
    assert result.timed_out and result.return_code == 124
    assert "started" in result.stdout
    left = await sandbox.exec(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"])
    assert "sleep 31" not in left.stdout, left.stdout
    if backend_name == "local":
        # each local exec has its own PID namespace, so the check above sees none of the timed-out
        # one's processes; the host's /proc sees them all
        needles = [f"sleep\x00{s}".encode() for s in seconds]
        for _ in range(40):
            survivors = [pid for needle in needles for pid in host_processes_with(needle)]
            if not survivors:
                break
            await asyncio.sleep(0.05)
        assert survivors == [], f"processes of the timed-out exec survive on the host: {survivors}"


async def test_output_is_capped_with_a_note(sandbox):
    result = await sandbox.exec(["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; echo tail >&2"],
                                output_cap=1000)
    assert result.truncated
    assert result.stdout.startswith("a" * 1000)
    assert "299000" in result.stdout[1000:], "the note says how much was cut"
    assert "tail" in result.stderr


async def test_put_get_round_trip_keeps_large_files_modes_and_symlinks(sandbox, tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    big = src / "big.bin"
    with big.open("wb") as handle:
        for _ in range(50):
            handle.write(os.urandom(1 << 20))
    (src / "sub" / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (src / "sub" / "run.sh").chmod(0o750)
    (src / "link").symlink_to("sub/run.sh")
    await sandbox.put(src, "/data/in")
    ran = await sandbox.exec(["/data/in/link"])
    assert ran.stdout.strip() == "ran"
    await sandbox.get("/data/in", tmp_path / "back")
    back = tmp_path / "back"
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert digest(back / "big.bin") == digest(big)
    assert stat.S_IMODE((back / "sub" / "run.sh").stat().st_mode) == 0o750
    assert os.readlink(back / "link") == "sub/run.sh"
    await sandbox.put(src / "sub" / "run.sh", "/single/copy.sh")
    await sandbox.get("/single/copy.sh", tmp_path / "one.sh")
    assert (tmp_path / "one.sh").read_text() == "#!/bin/sh\necho ran\n"


async def test_non_root_user_cannot_read_root_only_paths(sandbox):
    made = await sandbox.exec(["sh", "-c", "mkdir -p /tmp/private && echo s3cret > /tmp/private/key "
                                           "&& chmod 700 /tmp/private && chmod 600 /tmp/private/key"])
    assert made.success, made.stderr
    peek = await sandbox.exec(["cat", "/tmp/private/key"], user="agent")
    assert peek.return_code != 0 and "s3cret" not in peek.stdout
    assert (await sandbox.exec(["cat", "/tmp/private/key"])).stdout.strip() == "s3cret"


def _host_ip() -> str:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # no packet is sent for a UDP connect
        return probe.getsockname()[0]
    except OSError:
        return socket.gethostbyname(socket.gethostname())
    finally:
        probe.close()


async def test_no_network_has_only_loopback_and_cannot_connect(sandbox):
    devices = await sandbox.exec(["cat", "/proc/net/dev"])
    names = {line.split(":")[0].strip() for line in devices.stdout.splitlines() if ":" in line}
    assert names == {"lo"}, devices.stdout
    server = socket.create_server(("0.0.0.0", 0))
    try:
        port = server.getsockname()[1]
        code = (f"import socket\ntry:\n socket.create_connection(('{_host_ip()}', {port}), timeout=2)\n"
                " print('connected')\nexcept OSError as e:\n print('refused', e)")
        result = await sandbox.exec(["python3", "-c", code])
    finally:
        server.close()
    assert result.stdout.startswith("refused"), result.stdout + result.stderr


async def test_stop_is_idempotent_and_leaves_nothing(backend_name, tmp_path):
    box = get_backend(backend_name).create(make_spec(make_env(tmp_path), f"base-{backend_name}"))
    await box.start()
    sandbox_id = box.sandbox_id
    await box.stop()
    await box.stop()
    assert gone(backend_name, box, sandbox_id)
    with pytest.raises(Exception):
        await box.exec(["true"])


async def test_cancelled_trial_leaves_no_sandbox(backend_name, tmp_path):
    box = get_backend(backend_name).create(make_spec(make_env(tmp_path), f"base-{backend_name}"))
    started = asyncio.Event()

    async def trial() -> None:
        try:
            await box.start()
            started.set()
            await box.exec(["sleep", "60"])
        finally:
            await box.stop()

    task = asyncio.create_task(trial())
    await asyncio.wait_for(started.wait(), 120)
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(backend_name, box, box.sandbox_id)


async def test_exec_stream_echoes_lines_through_cat(sandbox):
    process = await sandbox.exec_stream(["cat"])
    for line in (b"first\n", b'{"jsonrpc": "2.0", "id": 1}\n'):
        process.stdin.write(line)
        await process.stdin.drain()
        assert await asyncio.wait_for(process.stdout.readline(), 10) == line
    process.stdin.write(b"last")
    process.stdin.close()
    assert await asyncio.wait_for(process.stdout.read(), 10) == b"last"
    assert await asyncio.wait_for(process.wait(), 10) == 0


async def test_exec_stream_kill_ends_the_process(sandbox):
    process = await sandbox.exec_stream(["sh", "-c", "echo ready; sleep 300"])
    assert await asyncio.wait_for(process.stdout.readline(), 10) == b"ready\n"
    await process.kill()
    assert await asyncio.wait_for(process.wait(), 10) != 0


async def test_snapshot_and_restore(sandbox):
    if not sandbox.capabilities.snapshots:
        pytest.skip("this backend declares no snapshots")
    await sandbox.exec(["sh", "-c", "echo before > /app/state"])
    ref = await sandbox.snapshot()
    await sandbox.exec(["sh", "-c", "echo after > /app/state"])
    await sandbox.restore(ref)
    assert (await sandbox.exec(["cat", "/app/state"])).stdout.strip() == "before"
