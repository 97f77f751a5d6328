"""The cloud-metadata block under an open network: by construction where the sandbox can, else the
agent starts only once a probe finds no metadata service; a refusal is one line, attempted once."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from benchflow.jobs.agent_network import ENDPOINTS, agent_network
from benchflow.jobs.phases import TrialState
from benchflow.jobs.retry import is_retryable
from benchflow.sandbox.base import REMEDY, ExecResult, MetadataBlock


class ProbedSandbox:
    """Answers the in-sandbox probe with what a real one printed; records what was run."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.commands: list[list[str]] = []

    async def exec(self, cmd, **_kwargs) -> ExecResult:
        self.commands.append(cmd)
        return ExecResult(0, self.answer + "\n")


class BlockingSandbox(ProbedSandbox):
    """A backend that puts the block in place itself (or says why it cannot)."""

    def __init__(self, block: MetadataBlock, answer: str = "done") -> None:
        super().__init__(answer)
        self.block, self.asked = block, 0

    async def enforce_metadata_block(self) -> MetadataBlock:
        self.asked += 1
        return self.block


def request(*, flag: bool = False, task_opt_out: bool = False, granted: str = "public"):
    sandbox_cfg = SimpleNamespace(network_mode="public", allowed_hosts=None, allow_cloud_metadata=task_opt_out)
    config = SimpleNamespace(sandbox=sandbox_cfg, agent=SimpleNamespace(network_mode=None, allowed_hosts=None))
    return SimpleNamespace(task=SimpleNamespace(config=config), spec=SimpleNamespace(allow_cloud_metadata=flag),
                           fit=SimpleNamespace(network=("public", granted)))


def paths(tmp_path):
    return SimpleNamespace(network=tmp_path / "network.json", egress_log=tmp_path / "egress.jsonl")


def verdict(tmp_path) -> dict:
    return json.loads((tmp_path / "network.json").read_text())["cloud_metadata"]


async def test_a_metadata_service_that_answers_never_starts_the_agent_and_is_not_retried(tmp_path) -> None:
    box, state, ran = ProbedSandbox("reached aws 169.254.169.254\ndone"), TrialState(), []
    async with agent_network(request(), box, paths(tmp_path), state):
        if state.error is None:
            ran.append("agent")
    assert ran == [] and state.error_category == "sandbox_setup"
    assert state.error.startswith("a cloud metadata service answers in the sandbox (aws metadata at 169.254.169.254)")
    assert state.error.endswith(REMEDY) and "\n" not in state.error
    assert state.sandbox_startup_info == {"reason": "refused", "refused": "cloud_metadata",
                                          "raw_message": state.error[:500]}
    assert not is_retryable({"rewards": None, "error": state.error, "error_category": state.error_category,
                             "sandbox_startup_info": state.sandbox_startup_info})
    assert all(e in " ".join(box.commands[0]) for e in ENDPOINTS)
    assert verdict(tmp_path)["reached"] == ["aws metadata at 169.254.169.254"]


async def test_endpoints_that_answer_as_no_metadata_service_let_the_agent_start(tmp_path) -> None:
    state = TrialState()
    answer = "answered 169.254.169.254 HTTP/1.1 502 Bad Gateway\nanswered 169.254.170.2 (nothing)\ndone"
    async with agent_network(request(), ProbedSandbox(answer), paths(tmp_path), state):
        assert state.error is None
    record = verdict(tmp_path)
    assert record["blocked"] is True and "no cloud metadata service answers at 169.254.169.254" in record["proof"]
    assert "169.254.169.254 HTTP/1.1 502 Bad Gateway (not a metadata service)" in record["proof"]
    assert "cannot block them by construction" in record["not_enforced"]


async def test_a_sandbox_with_no_probe_tool_is_refused(tmp_path) -> None:
    state = TrialState()
    async with agent_network(request(), ProbedSandbox("no-probe"), paths(tmp_path), state):
        pass
    assert state.error.startswith("no probe could show that no cloud metadata service answers in the sandbox "
                                  "(no-probe)"), state.error
    assert state.sandbox_startup_info["reason"] == "refused"


async def test_a_block_by_construction_needs_no_probe_and_is_recorded(tmp_path) -> None:
    box, state = BlockingSandbox(MetadataBlock(True, "routes nobody inside can change")), TrialState()
    async with agent_network(request(), box, paths(tmp_path), state):
        assert state.error is None
    assert box.commands == [] and box.asked == 1
    assert verdict(tmp_path) == {"blocked": True, "enforced_by": "routes nobody inside can change"}


async def test_a_backend_that_cannot_block_here_is_probed_and_its_remedy_given(tmp_path) -> None:
    block = MetadataBlock(False, "no python3 in the image", "give the image python3")
    box, state = BlockingSandbox(block, "reached gcp 169.254.169.254\ndone"), TrialState()
    async with agent_network(request(), box, paths(tmp_path), state):
        pass
    assert len(box.commands) == 1
    assert state.error == ("a cloud metadata service answers in the sandbox (gcp metadata at 169.254.169.254) and "
                           "the sandbox cannot block it (no python3 in the image); the agent was not started: "
                           "give the image python3")


@pytest.mark.parametrize("granted, by", [("no-network", "no network"), ("allowlist", "allowlist: no network but")])
async def test_no_network_and_the_egress_proxy_hold_by_construction(tmp_path, granted, by) -> None:
    box, state = BlockingSandbox(MetadataBlock(False, "never asked")), TrialState()
    req = request(granted=granted)
    req.task.config.sandbox.allowed_hosts = None  # no proxy started for this check
    async with agent_network(req, box, paths(tmp_path), state):
        assert state.error is None
    assert box.asked == 0 and box.commands == []
    assert verdict(tmp_path)["enforced_by"].startswith(by)


@pytest.mark.parametrize("flag, task_opt_out, by", [(True, False, "--allow-cloud-metadata"),
                                                    (False, True, "task sandbox.allow_cloud_metadata")])
async def test_an_opt_out_skips_the_block_and_is_recorded(tmp_path, flag, task_opt_out, by) -> None:
    box, state = BlockingSandbox(MetadataBlock(True, "x"), "reached aws 169.254.169.254\ndone"), TrialState()
    async with agent_network(request(flag=flag, task_opt_out=task_opt_out), box, paths(tmp_path), state):
        assert state.error is None
    assert box.commands == [] and box.asked == 0
    assert verdict(tmp_path) == {"blocked": False, "opt_out": by}
