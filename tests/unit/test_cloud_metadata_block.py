"""The cloud-metadata block under an open network: the agent starts only once it is proven."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchflow.jobs.agent_network import ENDPOINTS, agent_network
from benchflow.jobs.phases import TrialState
from benchflow.sandbox.base import ExecResult


class ProbedSandbox:
    """Answers the in-sandbox probe with what a real one printed; records what was run."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.commands: list[list[str]] = []

    async def exec(self, cmd, **_kwargs) -> ExecResult:
        self.commands.append(cmd)
        return ExecResult(0, self.answer + "\n")


def request(*, flag: bool = False, task_opt_out: bool = False, granted: str = "public"):
    sandbox_cfg = SimpleNamespace(network_mode="public", allowed_hosts=None, allow_cloud_metadata=task_opt_out)
    config = SimpleNamespace(sandbox=sandbox_cfg, agent=SimpleNamespace(network_mode=None, allowed_hosts=None))
    return SimpleNamespace(task=SimpleNamespace(config=config), spec=SimpleNamespace(allow_cloud_metadata=flag),
                           fit=SimpleNamespace(network=("public", granted)))


def paths(tmp_path):
    return SimpleNamespace(network=tmp_path / "network.json", egress_log=tmp_path / "egress.jsonl")


async def test_an_open_network_that_reaches_an_endpoint_never_starts_the_agent(tmp_path) -> None:
    box, state, ran = ProbedSandbox("reached 169.254.169.254"), TrialState(), []
    async with agent_network(request(), box, paths(tmp_path), state):
        if state.error is None:
            ran.append("agent")
    assert ran == [] and state.error_category == "sandbox_setup"
    assert "cloud metadata block not proven (reached 169.254.169.254)" in state.error
    assert "--allow-cloud-metadata" in state.error
    assert all(e in box.commands[0] for e in ENDPOINTS)


async def test_a_proven_block_lets_the_agent_start_and_is_recorded(tmp_path) -> None:
    import json

    state = TrialState()
    async with agent_network(request(), ProbedSandbox("blocked"), paths(tmp_path), state):
        assert state.error is None
    record = json.loads((tmp_path / "network.json").read_text())
    assert record["cloud_metadata"]["blocked"] is True and "none of 169.254.169.254" in record["cloud_metadata"]["proof"]


async def test_a_sandbox_with_no_probe_tool_is_not_proven(tmp_path) -> None:
    state = TrialState()
    async with agent_network(request(), ProbedSandbox("no-probe"), paths(tmp_path), state):
        pass
    assert "not proven (no-probe)" in state.error


@pytest.mark.parametrize("flag, task_opt_out, by", [(True, False, "--allow-cloud-metadata"),
                                                    (False, True, "task sandbox.allow_cloud_metadata")])
async def test_an_opt_out_skips_the_probe_and_is_recorded(tmp_path, flag, task_opt_out, by) -> None:
    import json

    box, state = ProbedSandbox("reached 169.254.169.254"), TrialState()
    async with agent_network(request(flag=flag, task_opt_out=task_opt_out), box, paths(tmp_path), state):
        assert state.error is None
    assert box.commands == []
    assert json.loads((tmp_path / "network.json").read_text())["cloud_metadata"] == {"blocked": False, "opt_out": by}
