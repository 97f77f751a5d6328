"""benchflow.branch.turns: a sequential fork's children run their agents one at a time, in order,
while the rest of each child (its sandbox start, verifier, teardown) overlaps the others."""

from __future__ import annotations

import asyncio

import pytest

from benchflow.branch import turns
from benchflow.branch.turns import in_turns


def test_agents_take_turns_in_order_and_a_verifier_overlaps_the_next_agent() -> None:
    events: list[tuple[str, int]] = []
    started = [asyncio.Event() for _ in range(4)]

    async def child(i: int, turn: turns.Turn) -> bool:
        await turn.wait()
        events.append(("agent", i))
        started[i].set()
        await asyncio.sleep(0)  # another child's agent would get in here if turns did not hold
        events.append(("agent done", i))
        turn.hand_over()
        if i + 1 < len(started):
            await started[i + 1].wait()  # the verifier still runs when the next agent has started
        events.append(("verified", i))
        return i != 2

    assert asyncio.run(in_turns(4, child)) == [True, True, False, True]
    agents = [e for e in events if e[0] != "verified"]
    assert agents == [(kind, i) for i in range(4) for kind in ("agent", "agent done")]
    for i in range(3):
        assert events.index(("agent", i + 1)) < events.index(("verified", i))


def test_a_child_that_ends_without_handing_over_still_lets_the_next_agent_start() -> None:
    async def child(i: int, turn: turns.Turn) -> bool:
        await turn.wait()
        return i == 1  # child 0 never calls hand_over (it failed before its agent)

    assert asyncio.run(in_turns(2, child)) == [False, True]


def test_at_most_live_children_hold_a_sandbox_at_once() -> None:
    holding, most = 0, 0

    async def child(i: int, turn: turns.Turn) -> bool:
        nonlocal holding, most
        async with turn.sandbox_slot():
            holding += 1
            most = max(most, holding)
            await turn.wait()
            await asyncio.sleep(0)
            turn.hand_over()
            await asyncio.sleep(0)
            holding -= 1
        return True

    assert all(asyncio.run(in_turns(8, child)))
    assert most == turns.LIVE


def test_a_failure_cancels_the_children_still_waiting() -> None:
    cancelled: list[int] = []

    async def child(i: int, turn: turns.Turn) -> bool:
        try:
            if i == 0:
                raise RuntimeError("the sandbox did not start")
            await turn.wait()
            await asyncio.Event().wait()  # never ends unless cancelled
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        return True

    with pytest.raises(RuntimeError, match="did not start"):
        asyncio.run(in_turns(3, child))
    assert sorted(cancelled) == [1, 2]
