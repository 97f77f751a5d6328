"""One conformance suite every registered sandbox backend must pass, with no backend-specific branch.

The backends are the registry's (``benchflow.sandbox.names()``): the built-in
table plus every ``benchflow.sandboxes`` entry point, including the test-only
``docker-variant`` of ``tests/doubles/docker_variant.py``, installed here by
putting its ``.dist-info`` folder on ``sys.path``. What differs between backends
is asked of the backend object (``capabilities``, ``exists``, ``leftovers``).
A backend that does not work on this machine is skipped with its own reason
(a failure under ``CI``).

The ``daytona`` backend (an entry point of this package) talks to the Daytona API
double of ``tests/doubles/daytona_api_double.py``, which backs each sandbox with a
container on the local engine. The ``modal`` backend talks to the Modal gRPC API double of
``tests/doubles/modal_api_double.py`` (control plane and task command router), which does the same,
and the ``agentcore`` backend to the AgentCore, ECR and registry double of
``tests/doubles/agentcore_api_double.py``. A backend that does not enforce ``no-network`` (see its
capabilities) runs the suite's sandboxes with ``public`` and skips the no-network check.

The ``apple-container`` backend runs the ``container`` CLI double of
``tests/doubles/apple_container_cli_double.py`` (first on PATH, with the backend's
non-macOS test hook set), which backs each Apple container with a container on the
local engine.

The remote-docker backend talks to the second engine of ``scripts/docker-engine.sh
--remote`` (``unix:///run/benchflow-remote-docker.sock``) unless
``BENCHFLOW_REMOTE_DOCKER_HOST`` points elsewhere.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchflow.errors import CapabilityError, SandboxError
from benchflow.sandbox import SandboxSpec, get_backend, names
from tests.conftest import ROOT, host_processes_with
from tests.doubles.docker_variant import PLUGIN_PATH

REMOTE_SOCKET = "unix:///run/benchflow-remote-docker.sock"
BASE = "benchflow/python:3.11-bookworm"
JOB = f"conformance-{os.getpid()}"


def _registered() -> list[str]:
    """Every backend name, with the test plugin installed (read at collection time)."""
    sys.path.insert(0, str(PLUGIN_PATH))
    try:
        return names()
    finally:
        sys.path.remove(str(PLUGIN_PATH))


@pytest.fixture(scope="session")
def local_cache(tmp_path_factory) -> Path:
    """One cache for the session's runs, so the suite's base image is built once per backend."""
    return tmp_path_factory.mktemp("conformance-cache")


@pytest.fixture(autouse=True)
def machine(monkeypatch, local_cache, daytona_double, apple_container_double, modal_double,
            agentcore_double) -> None:
    """This machine as the suite sees it: the test plugin installed, a private cache, the
    test script's second engine as the remote one when none is configured, the Daytona
    API double as Daytona, the CLI double as Apple's container CLI and the Modal gRPC double as Modal."""
    monkeypatch.syspath_prepend(str(PLUGIN_PATH))
    monkeypatch.setenv("BENCHFLOW_CACHE", str(local_cache))
    for name, value in (daytona_double.env().items() | apple_container_double.items() | modal_double.env().items()
                        | agentcore_double.env().items()):
        monkeypatch.setenv(name, value)
    if not os.environ.get("BENCHFLOW_REMOTE_DOCKER_HOST"):
        monkeypatch.setenv("BENCHFLOW_REMOTE_DOCKER_HOST", REMOTE_SOCKET)


def wait_until(predicate, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


@pytest.fixture(params=_registered())
def backend_name(request) -> str:
    ok, reason = get_backend(request.param).available()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"{request.param}: {reason} (CI is set, so this fails instead of skipping)")
        pytest.skip(f"{request.param} does not work here: {reason}")
    return request.param


@pytest.fixture
def backend(backend_name):
    return get_backend(backend_name)


def make_env(root: Path, run_line: str = "RUN date +%s%N > /opt/marker") -> Path:
    env = root / "environment"
    env.mkdir(parents=True, exist_ok=True)
    (env / "Dockerfile").write_text(f"FROM {BASE}\nWORKDIR /app\n{run_line}\n")
    return env


def strictest_network(backend_name: str) -> str:
    """``no-network`` where the backend enforces it, else ``public``."""
    return "no-network" if get_backend(backend_name).capabilities.network_for("no-network") else "public"


def make_spec(backend, env: Path, key: str, **overrides) -> SandboxSpec:
    fields = dict(name=f"conf-{key}", environment_dir=env, cache_key=key,
                  network_mode=strictest_network(backend.name),
                  labels={"benchflow.job": JOB, "benchflow.trial": f"conf-{os.getpid()}"})
    fields.update(overrides)
    return SandboxSpec(**fields)


@pytest.fixture
async def sandbox(backend, tmp_path):
    box = backend.create(make_spec(backend, make_env(tmp_path), f"base-{backend.name}"))
    await box.start()
    try:
        yield box
    finally:
        await box.stop()


async def test_build_cache_hit_and_miss_on_digest_change(backend, tmp_path):
    env = make_env(tmp_path)
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
    first = await marker(make_spec(backend, env, key))
    assert first.startswith("v1\n")
    assert first == await marker(make_spec(backend, env, key)), "same digest must reuse the built image"
    (env / "version.txt").write_text("v2\n")
    assert (await marker(make_spec(backend, env, key + "-changed"))).startswith("v2\n"), "a new digest must rebuild"


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


async def test_timeout_kills_the_whole_process_tree(sandbox):
    seconds = [f"31{n}.{os.getpid()}" for n in (6, 7, 8, 9)]  # unique to this test process
    # a plain background child, one that left the session with setsid, and the foreground one
    script = (f"sleep {seconds[0]} & (setsid sleep {seconds[1]} &) ; sleep {seconds[2]} & "
              f"echo started; sleep {seconds[3]}")
    result = await sandbox.exec(["sh", "-c", script], timeout=1.5)
    assert result.timed_out and result.return_code == 124
    assert "started" in result.stdout
    left = await sandbox.exec(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"])
    assert "sleep 31" not in left.stdout, left.stdout
    # a sandbox may give each exec its own PID namespace, so the host's /proc is asked too
    needles = [f"sleep\x00{s}".encode() for s in seconds]
    survivors = lambda: [pid for needle in needles for pid in host_processes_with(needle)]  # noqa: E731
    assert wait_until(lambda: not survivors(), 5), f"processes of the timed-out exec survive: {survivors()}"


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
    assert stat.S_IMODE((back / "sub" / "run.sh").stat().st_mode) == 0o755  # copy-out sets modes
    assert os.readlink(back / "link") == "sub/run.sh"
    await sandbox.put(src / "sub" / "run.sh", "/single/copy.sh")
    await sandbox.get("/single/copy.sh", tmp_path / "one.sh")
    assert (tmp_path / "one.sh").read_text() == "#!/bin/sh\necho ran\n"


async def test_a_put_over_what_the_sandbox_already_read_is_seen(sandbox, tmp_path):
    """The verifier's upload replaces files the sandbox has open or cached (gVisor's default
    exclusive file access would keep showing the old ones)."""
    seen = await sandbox.exec(["sh", "-c", "mkdir -p /late && echo old > /late/f && echo /late/* && cat /late/f"])
    assert seen.stdout.split() == ["/late/f", "old"], seen.stdout + seen.stderr
    (tmp_path / "f").write_text("new\n")
    (tmp_path / "g").write_text("added\n")
    await sandbox.put(tmp_path / "f", "/late/f")
    await sandbox.put(tmp_path / "g", "/late/g")
    after = await sandbox.exec(["sh", "-c", "echo /late/* && cat /late/f /late/g"])
    assert after.stdout.split() == ["/late/f", "/late/g", "new", "added"], after.stdout + after.stderr


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
    if sandbox.spec.network_mode != "no-network":
        pytest.skip("this backend does not enforce no-network (its capabilities say so)")
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


async def test_stop_is_idempotent_and_leaves_nothing(backend, tmp_path):
    box = backend.create(make_spec(backend, make_env(tmp_path), f"base-{backend.name}"))
    await box.start()
    sandbox_id = box.sandbox_id
    assert sandbox_id and backend.exists(sandbox_id)
    await box.stop()
    await box.stop()
    assert not backend.exists(sandbox_id)
    with pytest.raises(Exception):
        await box.exec(["true"])


async def test_cancelled_trial_leaves_no_sandbox(backend, tmp_path):
    box = backend.create(make_spec(backend, make_env(tmp_path), f"base-{backend.name}"))
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
    assert not backend.exists(box.sandbox_id)


def _of_trial(backend, trial: str) -> list:
    return [row for row in backend.leftovers(owner=JOB) if row.trial == trial]


async def test_a_start_whose_build_fails_leaves_nothing(backend, tmp_path):
    trial = f"failed-start-{os.getpid()}"
    env = make_env(tmp_path, run_line="RUN echo building; exit 3")
    box = backend.create(make_spec(backend, env, f"fails-{os.getpid()}-{tmp_path.name}",
                                   labels={"benchflow.job": JOB, "benchflow.trial": trial}))
    with pytest.raises(SandboxError):
        await box.start()  # start() builds first when it has to
    assert box.sandbox_id is None or not backend.exists(box.sandbox_id)
    assert _of_trial(backend, trial) == []


async def test_a_start_cancelled_midway_leaves_nothing(backend, tmp_path):
    trial = f"cancelled-start-{os.getpid()}"
    box = backend.create(make_spec(backend, make_env(tmp_path), f"base-{backend.name}",
                                   labels={"benchflow.job": JOB, "benchflow.trial": trial}))
    starting = asyncio.create_task(box.start())
    deadline = time.monotonic() + 120
    while box.sandbox_id is None and not starting.done() and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    starting.cancel()  # as soon as the sandbox has an id: mid-start where the backend has awaits left
    try:
        await starting
    except asyncio.CancelledError:
        assert box.sandbox_id is None or not backend.exists(box.sandbox_id)
        assert _of_trial(backend, trial) == []
    else:  # it had finished: then stop() is what removes it
        await box.stop()
        assert not backend.exists(box.sandbox_id)


async def test_leftovers_name_a_live_sandbox_with_its_job_and_trial(backend, sandbox):
    rows = [row for row in backend.leftovers(owner=JOB) if row.id == sandbox.sandbox_id]
    assert len(rows) == 1, backend.leftovers(owner=JOB)
    row = rows[0]
    assert (row.sandbox, row.job, row.trial, row.owner_alive, row.kept) == (
        backend.name, JOB, f"conf-{os.getpid()}", True, False)
    assert sandbox.sandbox_id not in {r.id for r in backend.leftovers(owner="some-other-job")}


CHILD = """
import asyncio, sys
from pathlib import Path
from benchflow.sandbox import SandboxSpec, get_backend
env = Path(sys.argv[2]) / "environment"
spec = SandboxSpec(name="orphan", environment_dir=env, cache_key=sys.argv[3], network_mode=sys.argv[6],
                   labels={"benchflow.job": sys.argv[4], "benchflow.trial": sys.argv[5]})
async def main():
    box = get_backend(sys.argv[1]).create(spec)
    await box.start()
    print(box.sandbox_id, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


async def test_what_a_killed_run_left_is_listed_as_an_orphan_and_removed(backend, tmp_path):
    trial = f"killed-{os.getpid()}"
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(PLUGIN_PATH), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", CHILD, backend.name, str(make_env(tmp_path).parent),
                              f"base-{backend.name}", JOB, trial, strictest_network(backend.name)],
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        sandbox_id = await asyncio.to_thread(child.stdout.readline)
        sandbox_id = sandbox_id.strip()
        assert sandbox_id, "the child process did not start its sandbox"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        rows = _of_trial(backend, trial)
        assert [(row.id, row.owner_alive) for row in rows] == [(sandbox_id, False)]
        assert backend.remove([sandbox_id]) == {}
        assert not backend.exists(sandbox_id)
        assert _of_trial(backend, trial) == []
        assert backend.remove([sandbox_id]) == {}, "removing what is already gone is no error"
    finally:
        if child.poll() is None:
            child.kill()
        for row in _of_trial(backend, trial):
            backend.remove([row.id])


async def test_host_mounts_work_or_are_refused(backend, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "note.txt").write_text("from the host\n")
    spec = make_spec(backend, make_env(tmp_path), f"base-{backend.name}", mounts={"/mnt/shared": shared})
    box = backend.create(spec)
    try:
        if backend.capabilities.host_mounts:
            await box.start()
            assert (await box.exec(["cat", "/mnt/shared/note.txt"])).stdout == "from the host\n"
            assert not (await box.exec(["sh", "-c", "echo x > /mnt/shared/new"])).success  # read-only
            assert not (shared / "new").exists()
        else:
            with pytest.raises(CapabilityError):
                await box.start()
    finally:
        await box.stop()
    assert box.sandbox_id is None or not backend.exists(box.sandbox_id)


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


async def test_a_kept_sandbox_outlives_stop_until_released(backend, sandbox):
    if not backend.capabilities.keep:
        pytest.skip("this backend declares no kept sandboxes")
    record = await sandbox.keep()
    try:
        await sandbox.stop()
        assert backend.exists(sandbox.sandbox_id)
        assert [row.kept for row in backend.leftovers(owner=JOB) if row.id == sandbox.sandbox_id] == [True]
    finally:
        backend.release(record)
    assert not backend.exists(sandbox.sandbox_id)


async def test_cache_entries_are_well_formed(backend, sandbox):
    store = backend.cache
    if store is None:
        pytest.skip("this backend keeps no cache")
    assert store.entries(kinds=()) == []
    for entry in store.entries(kinds=store.kinds):
        assert entry.kind in store.kinds and entry.engine == store.place and entry.size_bytes >= 0



# Every backend, one after another: under the parallel pass's load the slower engines time out.
pytestmark = pytest.mark.serial
