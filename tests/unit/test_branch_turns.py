"""benchflow.branch.turns: a sequential fork's children run their agents one at a time, in order,
while the rest of each child (its sandbox start, verifier, teardown) overlaps the others; the
sandboxes started ahead are lent to the children in order as they come up."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from benchflow.branch import turns
from benchflow.branch.turns import Ready, in_turns


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


class Boxes:
    """Sandboxes a test opens: each comes up when the test says (``up[i]``), and is closed on exit."""

    def __init__(self, n: int, fail: set[int] = frozenset()) -> None:
        self.up = [asyncio.Event() for _ in range(n)]
        self.fail = fail
        self.alive = self.most_alive = 0
        self.closed: list[int] = []
        self._next = 0

    @contextlib.asynccontextmanager
    async def open(self):
        i, self._next = self._next, self._next + 1
        self.alive += 1
        self.most_alive = max(self.most_alive, self.alive)
        try:
            await self.up[i].wait()
            if i in self.fail:
                raise RuntimeError(f"box {i} did not start")
            yield i
        finally:
            self.alive -= 1
            self.closed.append(i)


def test_ready_lends_the_sandboxes_in_the_order_they_come_up() -> None:
    got: list[int] = []

    async def main() -> None:
        boxes = Boxes(3)
        async with Ready(boxes.open, 3) as ready:
            async def take() -> None:
                async with ready.take() as box:
                    got.append(box)

            takers = [asyncio.create_task(take()) for _ in range(3)]
            for n, i in enumerate((2, 0, 1), start=1):  # the engine finishes them out of order
                boxes.up[i].set()
                for _ in range(100):  # event-loop steps, no clock: until the taker has it
                    if len(got) == n:
                        break
                    await asyncio.sleep(0)
            await asyncio.gather(*takers)
        assert sorted(boxes.closed) == [0, 1, 2] and boxes.alive == 0

    asyncio.run(main())
    assert got == [2, 0, 1]


def test_ready_keeps_at_most_live_open() -> None:
    async def main() -> Boxes:
        boxes = Boxes(8)
        for event in boxes.up:
            event.set()
        async with Ready(boxes.open, 8) as ready:
            async def take() -> None:
                async with ready.take():
                    await asyncio.sleep(0)

            await asyncio.gather(*(take() for _ in range(8)))
        return boxes

    boxes = asyncio.run(main())
    assert boxes.most_alive == turns.LIVE and sorted(boxes.closed) == list(range(8))


def test_a_failed_start_is_lent_as_its_error_and_keeps_its_place() -> None:
    async def main() -> list[object]:
        boxes = Boxes(2, fail={0})
        for event in boxes.up:
            event.set()
        seen: list[object] = []
        async with Ready(boxes.open, 2) as ready:
            async with ready.take() as first:
                seen.append(first)
            async with ready.take() as second:
                seen.append(second)
        return seen

    first, second = asyncio.run(main())
    assert isinstance(first, RuntimeError) and "box 0" in str(first) and second == 1


def test_leaving_the_block_closes_the_sandboxes_nobody_took() -> None:
    async def main() -> Boxes:
        boxes = Boxes(3)
        boxes.up[0].set()
        with pytest.raises(RuntimeError, match="a child failed"):
            async with Ready(boxes.open, 3) as ready, ready.take():
                raise RuntimeError("a child failed")
        return boxes

    boxes = asyncio.run(main())
    assert sorted(boxes.closed) == [0, 1, 2] and boxes.alive == 0  # 1 and 2 were still starting
