"""Hostile tasks and agents on the local sandbox, run as root (as CI does): nothing reaches the host.

Each test plays a part an unreviewed task or agent could: a ``solve.sh`` or
verifier that remounts and writes host folders, a ``RUN`` step that reads
root's home, an agent that looks for the tests, the jobs folder, host sockets
and host ports, and a process that reads every command line for keys.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import socket
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec, get_backend

pytestmark = [pytest.mark.local_sandbox,
              pytest.mark.skipif(os.geteuid() != 0, reason="these attacks matter when bench runs as root")]


@pytest.fixture
def make(local_sandboxes):
    async def factory(**overrides):
        return await local_sandboxes(**{"name": "hostile", "cache_key": "hostile", "network_mode": "no-network", **overrides})

    return factory


@pytest.fixture
def host_dir(request):
    """A fresh folder on the host under ``parent`` (removed afterwards), like a checkout or a jobs folder."""
    made = []

    def factory(parent: str) -> Path:
        folder = Path(parent) / f"bf-hostile-{secrets.token_hex(4)}"
        folder.mkdir(parents=True)
        made.append(folder)
        return folder

    yield factory
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


async def test_root_cannot_remount_or_write_host_folders(make, host_dir):
    target = host_dir("/srv")  # a host folder such as a checkout or /var/lib/docker
    name = f"bf-hostile-{secrets.token_hex(4)}"
    sb = await make()
    script = f"""
        for d in / /usr /etc /srv /var /var/lib/docker; do mount -o remount,rw "$d"; done
        mount -t tmpfs x /app; mount --bind /app /usr
        unshare -Urm sh -c 'mount -o remount,rw /usr; touch /usr/{name}'
        for f in /usr/{name} /etc/{name} /usr/local/{name} {target}/{name} /var/lib/docker/{name}; do
            mkdir -p "$(dirname "$f")"; echo owned > "$f"
        done
        mknod /app/mem c 1 1
        exit 0
    """
    result = await sb.exec(["sh", "-c", script])  # as root, like solve.sh and the verifier
    assert result.return_code == 0
    for host_path in (f"/usr/{name}", f"/etc/{name}", f"/usr/local/{name}", f"{target}/{name}",
                      f"/var/lib/docker/{name}"):
        assert not os.path.exists(host_path), host_path
    assert not list(target.iterdir())
    inside = await sb.exec(["sh", "-c", "cat /proc/self/uid_map; ls -l /app/mem 2>&1; grep CapEff /proc/self/status"])
    sandbox_root, host_root = inside.stdout.split()[:2]
    assert sandbox_root == "0" and int(host_root) >= 65536, "root in the sandbox is not root on the host"
    assert "No such file" in inside.stdout, "no device node can be made"
    cap_eff = int(inside.stdout.split("CapEff:")[1].split()[0], 16)
    assert not cap_eff & (1 << 21), "no CAP_SYS_ADMIN, even inside its own namespace"
    await sb.exec(["sh", "-c", "echo mine > /app/file"])
    assert (sb.state_dir / "fs" / "app" / "file").stat().st_uid == int(host_root), \
        "what sandbox root writes belongs to an unprivileged host id"


async def test_a_run_step_never_sees_roots_home_nor_the_hosts_root(cache, tmp_path, host_dir):
    marker = f"bf-secret-{secrets.token_hex(8)}"
    secret = Path("/root") / f".bf-hostile-{secrets.token_hex(4)}"
    secret.write_text(marker)
    task_dir = host_dir("/srv")
    (task_dir / "tests").mkdir()
    (task_dir / "tests" / "test.sh").write_text(f"echo {marker}\n")
    try:
        env = tmp_path / "environment"
        env.mkdir()
        (env / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\n"
            f"RUN (cat {secret}; ls -la /root /srv /home; cat {task_dir}/tests/test.sh; "
            "cat /proc/1/root/root/.bf-hostile-* ; ls /var/lib /run) > /opt/leak 2>&1; true\n")
        spec = SandboxSpec(name="hostile-build", environment_dir=env, cache_key=f"leak-{marker}",
                           network_mode="no-network")
        sb = get_backend("local").create(spec)
        await sb.start()
        try:
            seen = await sb.exec(["sh", "-c", f"cat /opt/leak; cat {secret}; ls -la /root"], user="agent")
            seen_root = await sb.exec(["sh", "-c", f"cat /opt/leak {secret} {task_dir}/tests/test.sh"])
        finally:
            await sb.stop()
        assert "No such file" in seen_root.stdout + seen_root.stderr
        assert marker not in seen.stdout + seen.stderr + seen_root.stdout + seen_root.stderr
        layers = list((cache / "local" / "images").rglob("leak"))
        assert layers and all(marker not in p.read_text(errors="replace") for p in layers)
    finally:
        secret.unlink()


async def test_the_agent_finds_no_tests_no_jobs_folder_no_host_socket_no_host_port(make, host_dir):
    task = host_dir("/srv")
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text("echo the answers\n")
    jobs = host_dir("/srv")
    (jobs / "job-1").mkdir()
    run_dir = host_dir("/run")
    path = run_dir / "host.sock"
    unix_server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_server.bind(str(path))
    os.chmod(run_dir, 0o777)
    os.chmod(path, 0o777)
    unix_server.listen(4)
    tcp_server = socket.create_server(("127.0.0.1", 0))
    port = tcp_server.getsockname()[1]
    try:
        sb = await make()
        probe = (
            "import os, socket, sys\n"
            "for path in sys.argv[1:4]:\n"
            "    print(path, os.path.exists(path))\n"
            "for target in (sys.argv[4], '/var/run/docker.sock', '/run/docker.sock'):\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    try:\n        s.connect(target); print('unix connected', target)\n"
            "    except OSError:\n        print('unix refused')\n"
            "try:\n    socket.create_connection(('127.0.0.1', int(sys.argv[5])), timeout=2); print('tcp connected')\n"
            "except OSError:\n    print('tcp refused')\n")
        result = await sb.exec(["python3", "-c", probe, f"{task}/tests/test.sh", str(jobs), str(run_dir),
                                str(path), str(port)], user="agent")
        lines = result.stdout.splitlines()
        assert lines[:3] == [f"{task}/tests/test.sh False", f"{jobs} False", f"{run_dir} False"], result.stderr
        assert lines[3:] == ["unix refused"] * 3 + ["tcp refused"], result.stdout + result.stderr
        found = await sb.exec(["sh", "-c", "ls -d /srv /work /run/docker.sock /var/lib/docker 2>&1"])
        assert found.stdout.count("No such file") == 4, found.stdout
    finally:
        unix_server.close()
        tcp_server.close()


def _cmdlines() -> bytes:
    seen = bytearray()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                seen += Path(f"/proc/{entry}/cmdline").read_bytes() + b"\n"
            except OSError:
                continue
    return bytes(seen)


async def test_secret_env_values_are_on_no_command_line(make):
    spec_secret, call_secret = f"sk-spec-{secrets.token_hex(12)}", f"sk-call-{secrets.token_hex(12)}"
    sb = await make(env={"OPENAI_API_KEY": spec_secret})
    proc = await sb.exec_stream(["sh", "-c", 'echo "$OPENAI_API_KEY $AGENT_TOKEN"; exec sleep 300'],
                                env={"AGENT_TOKEN": call_secret}, user="agent")
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 10)
        assert line.split() == [spec_secret.encode(), call_secret.encode()]  # they did arrive
        everything = _cmdlines()
        assert spec_secret.encode() not in everything and call_secret.encode() not in everything
        inside = await sb.exec(["sh", "-c", "cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null"],
                               user="agent")
        assert call_secret not in inside.stdout, "another exec's environment is out of reach"
    finally:
        await proc.kill()


async def test_a_100_kib_acp_line_round_trips(make):
    sb = await make()
    proc = await sb.exec_stream(["cat"])
    message = json.dumps({"jsonrpc": "2.0", "id": 1, "params": {"text": "x" * (100 << 10)}}).encode() + b"\n"
    proc.stdin.write(message)
    await proc.stdin.drain()
    assert await asyncio.wait_for(proc.stdout.readline(), 10) == message
    proc.stdin.close()
    assert await asyncio.wait_for(proc.wait(), 10) == 0


async def test_an_agent_install_writes_opt_benchflow_and_not_the_hosts(make):
    name = f"bf-hostile-{secrets.token_hex(4)}"
    sb = await make()
    install = await sb.exec(["sh", "-c", f"mkdir -p /opt/benchflow/bin && printf '#!/bin/sh\\necho installed\\n' "
                                         f"> /opt/benchflow/bin/{name} && chmod 755 /opt/benchflow/bin/{name}"])
    assert install.success, install.stderr
    assert (await sb.exec([f"/opt/benchflow/bin/{name}"], user="agent")).stdout.strip() == "installed"
    assert not os.path.exists(f"/opt/benchflow/bin/{name}")


async def test_under_no_network_a_server_from_one_exec_answers_the_next(make):
    sb = await make()
    server = await sb.exec_stream(["python3", "-c", (
        "import socket\ns = socket.create_server(('127.0.0.1', 0))\nprint(s.getsockname()[1], flush=True)\n"
        "while True:\n    c, _ = s.accept(); c.sendall(b'hello from exec one\\n'); c.close()")])
    try:
        port = int(await asyncio.wait_for(server.stdout.readline(), 10))
        client = await sb.exec(["python3", "-c", f"import socket; print(socket.create_connection(('127.0.0.1', "
                                                 f"{port}), timeout=5).recv(100).decode().strip())"], user="agent")
        assert client.stdout.strip() == "hello from exec one", client.stderr
    finally:
        await server.kill()


async def test_two_public_sandboxes_each_run_a_model_forwarder(make, tmp_path):
    from benchflow.jobs.bridge import MOUNT, SOCKET_NAME, open_bridge

    async def answer(reader, writer):
        data = await reader.readline()
        writer.write(b"gateway got " + data)
        await writer.drain()
        writer.close()

    folders, servers = [], []
    for n in range(2):
        folder = tmp_path / f"bridge-{n}"
        folder.mkdir(mode=0o755)
        servers.append(await asyncio.start_unix_server(answer, path=str(folder / SOCKET_NAME)))
        os.chmod(folder / SOCKET_NAME, 0o666)
        folders.append(folder)
    try:
        boxes = await asyncio.gather(*(make(network_mode="public", name=f"public-{n}", mounts={MOUNT: folders[n]})
                                       for n in range(2)))
        bridges = await asyncio.gather(*(open_bridge(box, folders[n] / SOCKET_NAME, mounted=True)
                                         for n, box in enumerate(boxes)))
        call = ("import socket, sys, urllib.parse\nu = urllib.parse.urlparse(sys.argv[1])\n"
                "c = socket.create_connection((u.hostname, u.port), timeout=5)\n"
                "c.sendall(sys.argv[2].encode() + b'\\n')\nprint(c.makefile().readline().strip())")
        replies = await asyncio.gather(*(box.exec(["python3", "-c", call, bridge.url, f"box-{n}"], user="agent")
                                         for n, (box, bridge) in enumerate(zip(boxes, bridges))))
        assert [r.stdout.strip() for r in replies] == ["gateway got box-0", "gateway got box-1"], \
            [r.stderr for r in replies]
        for bridge in bridges:
            bridge.close()
            await bridge.process.kill()
    finally:
        for server in servers:
            server.close()


@pytest.mark.parametrize("user", [None, "agent"], ids=["root", "agent"])
async def test_a_fork_bomb_stops_at_the_process_limit(make, monkeypatch, user):
    monkeypatch.setenv("BENCHFLOW_DOCKER_PIDS_LIMIT", "100")
    sb = await make(sandbox_user="agent")
    # Up to 300 sleepers (bounded); the forking subshell dies at the limit, then only builtins run.
    script = ("(n=0; while [ $n -lt 300 ]; do sleep 60 & n=$((n+1)); echo $n > /tmp/started; done) 2>/dev/null; "
              "read n < /tmp/started; echo started=$n; "
              "while read -r name a b c d; do [ \"$a\" = processes ] && echo hard=$c; done < /proc/self/limits")
    result = await sb.exec(["sh", "-c", script], user=user, timeout=120)
    started = int(result.stdout.split("started=")[1].split()[0])
    assert started < 100, result.stdout
    assert "hard=100" in result.stdout  # the hard limit: the sandbox cannot raise it
