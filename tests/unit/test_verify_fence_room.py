"""The fence's exec when the engine cannot start it (return code 126: an agent holds every pid the
sandbox may have): it is tried again in the room the sandbox makes (``room_to_start``), which is left
once the fence is done; a sandbox that has no such room fails the fence as before (verifier_infra)."""

from __future__ import annotations

import contextlib

import pytest

from benchflow.errors import VerifierError
from benchflow.sandbox.base import ExecResult
from benchflow.verify.fence import CANNOT_START, START_TRIES, fence

FENCE = {"agent_user": "agent", "verifier_user": None, "link_tests": True, "verifier_dir": "/verifier",
         "workdir": "/app", "cleanup_conftests": True}


class FullSandbox:
    """A sandbox whose process table an agent filled: no exec starts outside the room; in it, the
    first ``refused_in_room`` execs still do not (the bomb took the first room), then every one does."""

    def __init__(self, *, refused_in_room: int = 0) -> None:
        self.refused_in_room = refused_in_room
        self.events: list[str] = []
        self.in_room = False

    async def exec(self, cmd, *, user=None, env=None, cwd=None, timeout=None, stdin=None, output_cap=0):
        assert user is None  # the fence runs as root
        self.events.append("exec in room" if self.in_room else "exec")
        if not self.in_room or self.refused_in_room > 0:
            self.refused_in_room -= self.in_room
            return ExecResult(return_code=CANNOT_START, stdout="OCI runtime exec failed: unable to start")
        return ExecResult(return_code=0, stdout="conftest /app/conftest.py\n")

    @contextlib.asynccontextmanager
    async def room_to_start(self):
        self.events.append("room")
        self.in_room = True
        try:
            yield
        finally:
            self.in_room = False
            self.events.append("room left")


class NoRoomSandbox(FullSandbox):
    room_to_start = None  # a backend without the capability


async def test_an_exec_that_cannot_start_runs_again_in_the_room_which_is_left_after_the_fence():
    sandbox = FullSandbox()
    report = await fence(sandbox, **FENCE)
    assert report.conftests == ["/app/conftest.py"]
    assert sandbox.events == ["exec", "room", "exec in room", "room left"]


async def test_the_room_is_entered_once_and_tried_a_few_times():
    sandbox = FullSandbox(refused_in_room=START_TRIES - 1)
    await fence(sandbox, **FENCE)
    assert sandbox.events == ["exec", "room", *["exec in room"] * START_TRIES, "room left"]


async def test_no_room_in_the_end_fails_the_fence_as_an_infrastructure_error_after_leaving_the_room():
    sandbox = FullSandbox(refused_in_room=100)
    with pytest.raises(VerifierError) as failed:
        await fence(sandbox, **FENCE)
    assert failed.value.category == "verifier_infra"
    assert "rc=126" in str(failed.value)
    assert sandbox.events[-1] == "room left" and sandbox.events.count("room") == 1


async def test_a_sandbox_without_a_room_fails_the_fence_as_before():
    sandbox = NoRoomSandbox()
    with pytest.raises(VerifierError, match="rc=126"):
        await fence(sandbox, **FENCE)
