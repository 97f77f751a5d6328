"""A docker sandbox with a network of its own blocks the cloud metadata endpoints by construction
(issue #32): a helper container with NET_ADMIN puts unreachable routes and pinned neighbour entries
into the container's network namespace, and the agent, root or not, cannot change them.

The test's Docker engine has no default bridge, so there the sandbox joins a user-defined network the
test makes; Podman's service (``scripts/setup.d/podman.sh``) has one, and its sandbox takes it as a user's
would.
Nothing here connects to an endpoint (that would leave through the engine's host): the checks are
route lookups (``ip route get``) and the neighbour table, from inside the sandbox.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import pytest

from benchflow.sandbox import SandboxSpec
from benchflow.sandbox.docker import sandbox as docker_sandbox
from benchflow.sandbox.base import Capabilities, enforce_metadata_block
from benchflow.sandbox.docker.sandbox import DockerSandbox
from benchflow.sandbox.docker.metadata import NO_PYTHON

pytestmark = pytest.mark.docker

WITH_PYTHON = "benchflow/python-slim:3.11-bookworm"
WITHOUT_PYTHON = "debian:bookworm-slim"
BLOCK_SOURCE = (Path(docker_sandbox.__file__).parent.parent / "netns_block.py").read_text()

AGENT = r"""
import json, socket, struct, sys
nb = {"__name__": "netns_block"}
exec(sys.argv[1], nb)
link = nb["Netlink"]()
out = {}
route = struct.pack("=BBBBBBBBL", socket.AF_INET, 16, 0, 0, 254, 0, 0, 0, 0) + nb["_attr"](1, socket.inet_aton("169.254.0.0"))
out["delete route"] = link.request(25, nb["NLM_F_ACK"], route)[0]  # RTM_DELROUTE
better = struct.pack("=BBBBBBBBL", socket.AF_INET, 32, 0, 0, 254, 4, 0, 1, 0) + \
    nb["_attr"](1, socket.inet_aton("169.254.169.254")) + nb["_attr"](6, struct.pack("=L", 0))
out["better route"] = link.request(24, nb["NLM_F_ACK"] | nb["NLM_F_CREATE"], better)[0]  # RTM_NEWROUTE unicast
index = socket.if_nametoindex("eth0")
repin = struct.pack("=BBHiHBB", socket.AF_INET, 0, 0, index, nb["NUD_PERMANENT"], 0, 0) + \
    nb["_attr"](1, socket.inet_aton("169.254.169.254")) + nb["_attr"](2, b"\x02\x42\xac\x11\x00\x01")
out["repoint neighbour"] = link.request(28, nb["NLM_F_ACK"] | nb["NLM_F_REPLACE"], repin)[0]
out["still routed"] = nb["holds"](link)
with open("/proc/net/arp") as table:
    out["pinned"] = sorted(row.split()[0] for row in table.read().splitlines()[1:]
                           if row.split()[2] == "0x6" and row.split()[3] == "02:62:66:00:00:00")
print(json.dumps(out))
"""


@pytest.fixture
def user_network(monkeypatch):
    """A user-defined network the sandbox's container is put on (a bridge of its own)."""
    import docker

    client = docker.from_env()
    network = client.networks.create(f"bf-metadata-{secrets.token_hex(4)}", labels={"benchflow.test": "true"})
    monkeypatch.setattr(docker_sandbox, "container_network", lambda mode, url: (network.name, None))
    try:
        yield network.name
    finally:
        network.remove()


def _sandbox(image: str) -> DockerSandbox:
    spec = SandboxSpec(name="metadata-block", environment_dir=None, cache_key="metadata-block", image=image,
                       network_mode="public")
    return DockerSandbox(spec, url=None, capabilities=Capabilities(network_modes=frozenset({"no-network", "public"})))


def _helpers(container: str, engine: str | None = None) -> list[str]:
    """The helper containers of ``container`` still on the engine (the default one, or ``engine``)."""
    import docker

    client = docker.DockerClient(base_url=engine) if engine else docker.from_env()
    return [c.name for c in client.containers.list(all=True, filters={"name": f"bf-block-{container[:12]}"})]


async def test_the_agent_cannot_undo_the_block_a_helper_put_into_its_network(user_network) -> None:
    await _agent_cannot_undo_the_block(_sandbox(WITH_PYTHON))


@pytest.mark.parametrize("backend", ["podman", "remote-docker"])
async def test_an_engine_s_own_default_bridge_gets_the_block(backend: str, monkeypatch) -> None:
    """Podman gives a public sandbox the engine's default network (a real bridge, netavark): the same
    helper puts the block in place there, with nothing chosen by the test. ``remote-docker`` is the same
    engine reached as a remote one (``BENCHFLOW_REMOTE_DOCKER_HOST``): the helper runs on that engine."""
    from benchflow.sandbox import get_backend
    from benchflow.sandbox.docker_engine import REMOTE_ENV

    podman = get_backend("podman")
    ok, reason = podman.available()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"podman: {reason} (CI is set, so this fails instead of skipping)")
        pytest.skip(f"podman does not work here: {reason}")
    monkeypatch.setenv(REMOTE_ENV, podman.url())
    chosen = get_backend(backend)
    assert chosen.url() == podman.url()
    spec = SandboxSpec(name="metadata-block", environment_dir=None, cache_key="metadata-block", image=WITH_PYTHON,
                       network_mode="public")
    await _agent_cannot_undo_the_block(chosen.create(spec), engine=podman.url())


async def _agent_cannot_undo_the_block(box: DockerSandbox, engine: str | None = None) -> None:
    await box.start()
    container = box.sandbox_id
    try:
        block = await enforce_metadata_block(box)
        assert block.enforced is True and "helper container with NET_ADMIN" in block.how, block
        assert await enforce_metadata_block(box) is block  # once per container
        for user in ("root", "agent"):
            done = await box.exec(["python3", "-c", AGENT, BLOCK_SOURCE], user=user, timeout=60)
            assert done.return_code == 0, done.stdout + done.stderr
            seen = json.loads(done.stdout)
            assert seen["delete route"] == seen["better route"] == seen["repoint neighbour"] == 1, seen  # EPERM
            assert seen["still routed"] == [], seen
            assert seen["pinned"] == ["100.100.100.200", "169.254.169.254", "169.254.170.2"], seen
    finally:
        await box.stop()
    assert _helpers(container, engine) == []


async def test_an_image_without_python3_is_not_enforced_and_says_what_gets_it(user_network) -> None:
    box = _sandbox(WITHOUT_PYTHON)
    await box.start()
    container = box.sandbox_id
    try:
        block = await enforce_metadata_block(box)
    finally:
        await box.stop()
    assert block.enforced is False and block.how == NO_PYTHON
    assert block.remedy.startswith("give the task image python3") and "--allow-cloud-metadata" in block.remedy
    assert _helpers(container) == []
