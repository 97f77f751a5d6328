"""The cloud-metadata probe asks for a metadata *service*, not an open port (issue #32).

It runs, as in a sandbox, in a network namespace the test makes, where a stand-in answers on the
endpoint addresses (:mod:`tests.doubles.metadata_service_double`): a transparent proxy that answers
every address with a 502 or closes does not stop the agent; a service that answers as AWS, GCP,
Azure or ECS does, once, with a line that names what gets the block. Needs root and ``ip netns``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchflow.jobs.agent_network import agent_network
from benchflow.jobs.metadata_probe import probe
from benchflow.jobs.phases import TrialState
from benchflow.jobs.retry import deterministic_reason, is_retryable
from benchflow.sandbox.base import ExecResult
from tests.doubles.metadata_service_double import metadata_namespace, serve_in

IP = shutil.which("ip") or "ip"
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 to make a network namespace")


class NamespaceSandbox:
    """Runs each command in the test's network namespace, as a sandbox would run it in its own; with
    ``shell_only``, on a PATH without python3 (the bash fallback)."""

    def __init__(self, namespace: str, path: str) -> None:
        self.namespace, self.path = namespace, path

    async def exec(self, cmd, **_kwargs) -> ExecResult:
        proc = await asyncio.create_subprocess_exec(IP, "netns", "exec", self.namespace, *cmd,
                                                    env={"PATH": self.path}, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        return ExecResult(proc.returncode or 0, out.decode(), err.decode())


@pytest.fixture(params=["python3", "bash"])
def path(request, tmp_path: Path) -> str:
    """The sandbox's PATH: the host's, or one with sh and bash but no python3."""
    if request.param == "python3":
        return "/usr/bin:/bin"
    shell_only = tmp_path / "bin"
    shell_only.mkdir()
    for name in ("sh", "bash", "sleep"):
        (shell_only / name).symlink_to(shutil.which(name, path="/usr/bin:/bin"))
    return str(shell_only)


def _request():
    sandbox_cfg = SimpleNamespace(network_mode="public", allowed_hosts=None, allow_cloud_metadata=False)
    config = SimpleNamespace(sandbox=sandbox_cfg, agent=SimpleNamespace(network_mode=None, allowed_hosts=None))
    return SimpleNamespace(task=SimpleNamespace(config=config), spec=SimpleNamespace(allow_cloud_metadata=False),
                           fit=SimpleNamespace(network=("public", "public")))


async def _trial(sandbox, tmp_path: Path) -> tuple[TrialState, dict, list[str]]:
    state, ran = TrialState(), []
    paths = SimpleNamespace(network=tmp_path / "network.json", egress_log=tmp_path / "egress.jsonl")
    async with agent_network(_request(), sandbox, paths, state):
        if state.error is None:
            ran.append("agent")
    return state, json.loads(paths.network.read_text())["cloud_metadata"], ran


@pytest.mark.parametrize("mode", ["proxy-502", "silent"])
async def test_a_network_that_answers_every_address_does_not_refuse_the_agent(mode, path, tmp_path) -> None:
    with metadata_namespace() as namespace, serve_in(namespace, mode) as served:
        state, verdict, ran = await _trial(NamespaceSandbox(namespace, path), tmp_path)
        hits = served.hits()
    assert ran == ["agent"] and state.error is None, state.error
    assert verdict["blocked"] is True and "no cloud metadata service answers" in verdict["proof"], verdict
    assert "cannot block them by construction" in verdict["not_enforced"]
    if mode == "proxy-502":
        assert "169.254.169.254 HTTP/1.1 502 Bad Gateway (not a metadata service)" in verdict["proof"]
    assert {h.split()[1] for h in hits} >= {"169.254.169.254", "169.254.170.2", "100.100.100.200"}, hits


async def test_a_namespace_where_nothing_listens_is_proven_blocked(path, tmp_path) -> None:
    with metadata_namespace() as namespace:
        found = await probe(NamespaceSandbox(namespace, path))
    assert found.ran and found.reached == [] and found.summary() == "nothing answered", found


@pytest.mark.parametrize("mode, service", [("aws", "aws"), ("gcp", "gcp"), ("azure", "azure"), ("ecs", "ecs")])
async def test_a_real_looking_metadata_service_is_found_and_the_agent_refused_once(mode, service, path,
                                                                                     tmp_path) -> None:
    with metadata_namespace() as namespace, serve_in(namespace, mode):
        state, verdict, ran = await _trial(NamespaceSandbox(namespace, path), tmp_path)
    address = "169.254.170.2" if service == "ecs" else "169.254.169.254"
    assert ran == [] and verdict["blocked"] is False
    assert f"{service} metadata at {address}" in verdict["reached"], verdict
    assert state.error.startswith("a cloud metadata service answers in the sandbox (")
    assert f"{service} metadata at {address}" in state.error
    assert "\n" not in state.error and state.error.endswith(
        'use --sandbox local (it blocks them by construction), or network_mode "allowlist" or "no-network", '
        "or pass --allow-cloud-metadata"), state.error
    assert state.error_category == "sandbox_setup"
    assert state.sandbox_startup_info["reason"] == "refused"
    assert state.sandbox_startup_info["refused"] == "cloud_metadata"
    result = {"rewards": None, "error": state.error, "error_category": state.error_category,
              "sandbox_startup_info": state.sandbox_startup_info}
    assert not is_retryable(result) and deterministic_reason(result)  # attempted once
