"""The local sandbox blocks the cloud metadata endpoints by construction (issue #32): unreachable
routes in its own network namespace, which the agent, root or not, cannot remove or get around.

The whole sandbox (holder, slirp4netns) runs inside a network namespace the test makes
(:func:`tests.doubles.metadata_service_double.metadata_namespace`), where a stand-in metadata
service answers on ``169.254.169.254`` and on a control address: nothing is sent to a real
link-local address. Needs root, ``ip netns`` and slirp4netns.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doubles.metadata_service_double import CONTROL, metadata_namespace, serve_in

pytestmark = [pytest.mark.local_sandbox,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("slirp4netns"),
                                 reason="needs root, iproute2 and slirp4netns")]

ROOT = Path(__file__).resolve().parents[2]

AGENT = r"""
import json, socket, struct, subprocess, sys
out = {}

def connect(address, device=None):
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
    sock.settimeout(5)
    try:
        if device:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device)
        sock.connect((address, 80))
        sock.sendall(b"GET /latest/meta-data/ HTTP/1.0\r\n\r\n")
        return "reached " + sock.recv(200).decode(errors="replace").split("\r\n")[0]
    except OSError as exc:
        return "blocked " + str(exc)
    finally:
        sock.close()

def ip(*args):
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    return (done.stdout + done.stderr).strip() or "rc=%d" % done.returncode

out["control"] = connect(sys.argv[1])
out["metadata"] = connect("169.254.169.254")
out["bound to tap0"] = connect("169.254.169.254", b"tap0")
out["alibaba"] = connect("100.100.100.200")
out["undo"] = [ip("route", "del", "169.254.0.0/16"), ip("route", "del", "169.254.169.254/32"),
               ip("route", "flush", "type", "unreachable"),
               ip("route", "add", "169.254.169.254/32", "via", "10.0.2.2", "metric", "0"),
               ip("neigh", "replace", "169.254.169.254", "lladdr", "52:55:0a:00:02:02", "dev", "tap0")]
out["metadata after"] = connect("169.254.169.254")
out["routes"] = ip("route", "show", "type", "unreachable")
print(json.dumps(out))
"""

DRIVER = r"""
import asyncio, json, sys
from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.base import enforce_metadata_block

async def main():
    box = get_backend("local").create(SandboxSpec(name="metadata-block", environment_dir=None,
                                                  cache_key="metadata-block", network_mode="public"))
    await box.start()
    try:
        block = await enforce_metadata_block(box)
        found = {"enforced": block.enforced, "how": block.how}
        for user in ("root", "agent"):
            done = await box.exec(["python3", "-c", sys.argv[1], sys.argv[2]], user=user, timeout=120)
            found[user] = json.loads(done.stdout) if done.return_code == 0 else done.stdout + done.stderr
    finally:
        await box.stop()
    print(json.dumps(found))

asyncio.run(main())
"""


def _in_namespace(namespace: str, tmp_path: Path) -> dict:
    """The driver above, run in ``namespace`` (so the sandbox's slirp4netns goes out there)."""
    env = {**os.environ, "BENCHFLOW_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-c", DRIVER, AGENT, CONTROL],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_agent_cannot_reach_or_unblock_a_metadata_service_that_answers(tmp_path) -> None:
    with metadata_namespace() as namespace, serve_in(namespace, "aws") as served:
        found = _in_namespace(namespace, tmp_path)
        hits = served.hits()
    assert found["enforced"] is True and "unreachable routes" in found["how"] and "CAP_NET_ADMIN" in found["how"]
    for user in ("root", "agent"):
        seen = found[user]
        assert isinstance(seen, dict), seen
        assert seen["control"] == "reached HTTP/1.1 200 OK", seen  # the network works, and the service answers
        assert seen["metadata"] == "blocked [Errno 113] No route to host", seen
        assert seen["alibaba"] == "blocked [Errno 113] No route to host", seen
        assert seen["bound to tap0"].startswith("blocked "), seen  # on-link: slirp answers no ARP for it
        assert all("Operation not permitted" in line for line in seen["undo"]), seen["undo"]
        assert seen["metadata after"] == "blocked [Errno 113] No route to host", seen
        assert "unreachable 169.254.0.0/16" in seen["routes"] and "unreachable 169.254.169.254" in seen["routes"]
    assert {hit.split()[1] for hit in hits} == {CONTROL}, hits  # nothing reached the stand-in's endpoints
