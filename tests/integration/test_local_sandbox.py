"""The local sandbox on real namespaces: exec, isolation, files, teardown."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import stat

import pytest

from benchflow.errors import InfraError
from benchflow.sandbox import SandboxSpec, get_backend
from tests.conftest import host_processes_with

pytestmark = pytest.mark.local_sandbox


@pytest.fixture
def make(local_sandboxes):
    async def factory(**overrides):
        return await local_sandboxes(**{"name": "local-test", "cache_key": "k", **overrides})

    return factory


async def test_exec_basics(make):
    sb = await make(env={"TASK_VAR": "from-spec"})
    assert sb.workdir == "/app"
    r = await sb.exec(["sh", "-c", "pwd; echo $TASK_VAR $CALL_VAR; cat; exit 42"],
                      env={"CALL_VAR": "from-call"}, stdin=b"piped-in")
    assert r.return_code == 42 and not r.success
    assert r.stdout.splitlines() == ["/app", "from-spec from-call", "piped-in"]
    r = await sb.exec(["pwd"], cwd="/tmp")
    assert r.stdout.strip() == "/tmp"
    r = await sb.exec(["sh", "-c", "echo oops >&2; kill -9 $$"])
    assert r.return_code == 137 and "oops" in r.stderr
    r = await sb.exec(["id", "-un"], user="agent")
    assert r.stdout.strip() == "agent"
    with pytest.raises(InfraError, match="no user"):
        await sb.exec(["id"], user="no-such-user")


async def test_output_cap_cuts_with_a_note(make):
    sb = await make()
    r = await sb.exec(["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x"], output_cap=1000)
    assert r.truncated and r.return_code == 0
    assert r.stdout.startswith("x" * 1000) and "299000 more bytes" in r.stdout


async def test_host_root_read_only_private_dirs_writable_and_own_pid_namespace(make):
    sb = await make()
    r = await sb.exec(["sh", "-c", "touch /usr/bf-should-fail"])
    assert r.return_code != 0 and "Read-only" in r.stderr
    assert not os.path.exists("/usr/bf-should-fail")
    for path in ("/app/a", "/tmp/a", "/logs/agent/a", "/logs/verifier/a", "/root/a"):
        r = await sb.exec(["sh", "-c", f"echo x > {path}"])
        assert r.success, (path, r.stderr)
    r = await sb.exec(["sh", "-c", "ls /proc | grep -c '^[0-9]'"])
    assert int(r.stdout) < 10  # only this command's processes, not the host's


async def test_timeout_kills_the_whole_tree(make):
    sb = await make()
    marker = "313.25"
    script = f"sleep {marker} & (setsid sleep {marker} &) ; sleep {marker}"
    r = await sb.exec(["sh", "-c", script], timeout=1)
    assert r.timed_out and r.return_code == 124
    await asyncio.sleep(0.2)
    assert host_processes_with(f"sleep\0{marker}") == []


async def test_non_root_user_cannot_read_root_only_files(make, tmp_path):
    sb = await make()
    secret = tmp_path / "secret"
    secret.write_text("root eyes only")
    secret.chmod(0o600)
    await sb.put(secret, "/secret.txt")
    r = await sb.exec(["cat", "/secret.txt"])
    assert r.stdout == "root eyes only"
    r = await sb.exec(["cat", "/secret.txt"], user="agent")
    assert r.return_code != 0 and "Permission denied" in r.stderr
    r = await sb.exec(["cat", "/etc/shadow"], user="agent")
    assert r.return_code != 0
    r = await sb.exec(["sh", "-c", "touch /app/mine && ls /root"], user="agent")
    assert r.return_code != 0 and "Permission denied" in r.stderr  # /root stays root's


@pytest.fixture
def listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


CONNECT = "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3); print('connected')"


async def test_no_network_has_only_loopback(make, listener):
    sb = await make(network_mode="no-network")
    r = await sb.exec(["python3", "-c", CONNECT, str(listener)])
    assert r.return_code != 0 and "connected" not in r.stdout
    r = await sb.exec(["cat", "/proc/net/dev"])
    interfaces = [line.split(":")[0].strip() for line in r.stdout.splitlines()[2:]]
    assert interfaces == ["lo"]


def _host_address() -> str:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # no packet is sent for a UDP connect
        return probe.getsockname()[0]
    finally:
        probe.close()


async def test_public_network_goes_out_through_its_own_stack_not_the_hosts_loopback(make):
    outside = socket.create_server(("0.0.0.0", 0))
    loopback_only = socket.create_server(("127.0.0.1", 0))
    try:
        sb = await make(network_mode="public")
        code = ("import socket, sys\nfor host, port in zip(sys.argv[1::2], sys.argv[2::2]):\n"
                " try:\n  socket.create_connection((host, int(port)), timeout=3); print('connected')\n"
                " except OSError as e:\n  print('refused')")
        port, lo_port = outside.getsockname()[1], loopback_only.getsockname()[1]
        r = await sb.exec(["python3", "-c", code, _host_address(), str(port), "127.0.0.1", str(lo_port),
                           "10.0.2.2", str(lo_port)])
        assert r.stdout.split() == ["connected", "refused", "refused"], r.stdout + r.stderr
        devices = await sb.exec(["cat", "/proc/net/dev"])
        assert {line.split(":")[0].strip() for line in devices.stdout.splitlines()[2:]} == {"lo", "tap0"}
    finally:
        outside.close()
        loopback_only.close()


async def test_put_get_50_mb_round_trip(make, tmp_path):
    sb = await make()
    big = tmp_path / "big.bin"
    with big.open("wb") as handle:
        for _ in range(50):
            handle.write(os.urandom(1 << 20))
    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    await sb.put(big, "/app/data/big.bin")
    r = await sb.exec(["sha256sum", "/app/data/big.bin"])
    assert r.stdout.split()[0] == digest
    back = tmp_path / "back.bin"
    await sb.get("/app/data/big.bin", back)
    assert hashlib.sha256(back.read_bytes()).hexdigest() == digest


async def test_folders_keep_modes_and_symlinks(make, tmp_path):
    sb = await make()
    src = tmp_path / "tree"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (src / "sub" / "run.sh").chmod(0o750)
    (src / "link").symlink_to("sub/run.sh")
    await sb.put(src, "/oracle")
    await sb.put(tmp_path / "tree" / "sub" / "run.sh", "/instruction.md")
    r = await sb.exec(["sh", "-c", "/oracle/link; stat -c %a /oracle/sub/run.sh; readlink /oracle/link; "
                       "test -f /instruction.md && echo placed"])
    assert r.stdout.split() == ["ran", "750", "sub/run.sh", "placed"]
    await sb.exec(["sh", "-c", "mkdir -p /logs/verifier/x && echo 1 > /logs/verifier/x/reward.txt"])
    out = tmp_path / "out"
    await sb.get("/oracle", out / "oracle")
    await sb.get("/logs/verifier", out / "verifier")
    assert (out / "oracle" / "link").is_symlink() and os.readlink(out / "oracle" / "link") == "sub/run.sh"
    assert stat.S_IMODE((out / "oracle" / "sub" / "run.sh").stat().st_mode) == 0o755  # copy-out modes
    assert (out / "verifier" / "x" / "reward.txt").read_text() == "1\n"
    with pytest.raises(FileNotFoundError):
        await sb.get("/logs/nothing-here", out / "none")


async def test_put_refuses_to_follow_sandbox_made_links_out(make, tmp_path):
    sb = await make()
    await sb.exec(["ln", "-s", "/etc", "/app/escape"])
    payload = tmp_path / "p"
    payload.write_text("x")
    with pytest.raises(InfraError, match="symlink"):
        await sb.put(payload, "/app/escape/bf-owned")
    assert not os.path.exists("/etc/bf-owned")


async def test_exec_stream_keeps_stdio_open(make):
    sb = await make()
    proc = await sb.exec_stream(["sh", "-c", "while read -r line; do echo got:$line; done; echo bye >&2"])
    proc.stdin.write(b"one\n")
    await proc.stdin.drain()
    assert await asyncio.wait_for(proc.stdout.readline(), 5) == b"got:one\n"
    proc.stdin.write(b"two\n")
    await proc.stdin.drain()
    assert await asyncio.wait_for(proc.stdout.readline(), 5) == b"got:two\n"
    proc.stdin.close()
    assert await asyncio.wait_for(proc.wait(), 5) == 0
    assert await proc.stderr.read() == b"bye\n"
    killed = await sb.exec_stream(["sleep", "300"])
    await killed.kill()
    assert await killed.wait() != 0


async def test_snapshot_and_restore(make):
    sb = await make()
    await sb.exec(["sh", "-c", "echo before > /app/f"])
    ref = await sb.snapshot()
    await sb.exec(["sh", "-c", "echo after > /app/f; echo new > /app/g"])
    await sb.restore(ref)
    r = await sb.exec(["sh", "-c", "cat /app/f; ls /app"])
    assert r.stdout.split() == ["before", "f"]


async def test_cancellation_leaves_no_process_and_no_state(cache):
    marker = "277.75"
    spec = SandboxSpec(name="cancel-me", environment_dir=None, cache_key="k")
    sandbox = get_backend("local").create(spec)
    started = asyncio.Event()

    async def trial():
        try:
            await sandbox.start()
            started.set()
            await sandbox.exec(["sh", "-c", f"sleep {marker} & sleep {marker}"])
        finally:
            await sandbox.stop()

    task = asyncio.create_task(trial())
    await asyncio.wait_for(started.wait(), 10)
    for _ in range(50):
        if host_processes_with(f"sleep\0{marker}"):
            break
        await asyncio.sleep(0.05)
    assert host_processes_with(f"sleep\0{marker}")
    state = sandbox.state_dir
    assert state is not None and state.is_dir()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    assert host_processes_with(f"sleep\0{marker}") == []
    assert not state.exists()
    await sandbox.stop()  # a second stop is harmless
    with pytest.raises(InfraError):
        await sandbox.exec(["true"])


async def test_spec_mounts_share_a_host_folder_read_only_even_without_network(make, tmp_path):
    shared = tmp_path / "bridge"
    shared.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(shared / "gw.sock"))
    os.chmod(shared / "gw.sock", 0o666)  # as the gateway makes it: the sandbox's ids are not the host's
    server.listen(1)
    server.settimeout(20)
    try:
        sb = await make(network_mode="no-network", mounts={"/run/bf-bridge": shared})
        code = ("import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/bf-bridge/gw.sock'); "
                "s.sendall(b'ping'); print('sent')")
        task = asyncio.create_task(sb.exec(["python3", "-c", code]))
        conn, _ = await asyncio.get_running_loop().run_in_executor(None, server.accept)
        assert conn.recv(4) == b"ping"
        conn.close()
        assert (await task).stdout.strip() == "sent"
        wrote = await sb.exec(["sh", "-c", "echo from-inside > /run/bf-bridge/note"])
        assert not wrote.success and not (shared / "note").exists()  # mounts are read-only
    finally:
        server.close()
