"""The agent phase copies /logs/agent and the artifacts out side by side."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchflow.jobs.phases import _copy_out_agent


class _Sandbox:
    """Each copy-out waits until the other one has started: run one after the other, they never end."""

    workdir = "/app"

    def __init__(self, fail_artifacts: bool = False) -> None:
        self.started = {"/logs/agent": asyncio.Event(), "/logs/artifacts": asyncio.Event()}
        self.cancelled: list[str] = []
        self.fail_artifacts = fail_artifacts

    async def get(self, remote: str, local: Path) -> None:
        self.started[remote].set()
        if remote == "/logs/artifacts" and self.fail_artifacts:
            await self.started["/logs/agent"].wait()
            raise RuntimeError("the copy broke")
        try:
            await self.started["/logs/artifacts" if remote == "/logs/agent" else "/logs/agent"].wait()
            if self.fail_artifacts:
                await asyncio.Event().wait()  # held until cancelled
        except asyncio.CancelledError:
            self.cancelled.append(remote)
            raise


def _args(tmp_path: Path, sandbox: _Sandbox) -> tuple:
    req = SimpleNamespace(task=SimpleNamespace(config=SimpleNamespace(artifacts=[])))
    paths = SimpleNamespace(agent_dir=tmp_path / "agent", artifacts_dir=tmp_path / "artifacts")
    return req, sandbox, paths, SimpleNamespace(copy_out_info={})


def test_both_copies_run_side_by_side(tmp_path: Path) -> None:
    sandbox = _Sandbox()
    args = _args(tmp_path, sandbox)

    async def go() -> None:
        await asyncio.wait_for(_copy_out_agent(*args), 60)  # one after the other: never ends

    asyncio.run(go())
    assert args[3].copy_out_info == {}


def test_a_failed_artifacts_copy_stops_the_logs_copy(tmp_path: Path) -> None:
    sandbox = _Sandbox(fail_artifacts=True)

    async def go() -> None:
        await asyncio.wait_for(_copy_out_agent(*_args(tmp_path, sandbox)), 60)

    with pytest.raises(RuntimeError, match="the copy broke"):
        asyncio.run(go())
    assert sandbox.cancelled == ["/logs/agent"]
