"""A sequential fork's children in turns: one agent at a time, in order; the rest of each child overlapped.

Sequential children promise one agent at a time, in the children's order (one model session at
a time, no two agents competing for the machine). Nothing else of a child needs to wait for the
child before it: while child N's agent runs, the sandboxes of the next children start straight
from the fork's snapshot, and child N's verifier, copy-outs, record and teardown run while child
N+1's agent works. A child waits for its :class:`Turn` before its agent starts and hands the turn
on once its agent has stopped, before its logs are copied out (or when the child ended without an
agent). On a task whose agent is quick this is most of what a child costs, and every fresh trial
pays it one after the other. (A ``--child-retries`` retry of a child whose agent did nothing, an
infrastructure failure, runs without waiting for a turn again.)

Used only where every child stands alone (see ``trial._in_turns``): no nested fork under them (those
run in the child's sandbox after its verifier), no ``--stop-on-child-failure`` (the next child would
start before the verdict), a backend that starts sandboxes from a snapshot, and no compose services
or declared environment state (those live outside the sandbox snapshot).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

LIVE = 3
"""Children's sandboxes alive at once besides the trial's own: the one verifying, the one whose agent
runs, and one started ahead."""


class Turn:
    """One child's turn at running its agent."""

    def __init__(self, before: asyncio.Event | None, sandboxes: asyncio.Semaphore) -> None:
        self._before = before
        self._sandboxes = sandboxes
        self.over = asyncio.Event()

    async def wait(self) -> None:
        """Until the previous child's agent phase is over."""
        if self._before is not None:
            await self._before.wait()

    def hand_over(self) -> None:
        """This child's agent phase is over: the next child's agent may start (idempotent)."""
        self.over.set()

    @contextlib.asynccontextmanager
    async def sandbox_slot(self) -> AsyncIterator[None]:
        """Hold one of the :data:`LIVE` places for a child's own sandbox (taken in the children's order)."""
        async with self._sandboxes:
            yield


async def in_turns(count: int, run: Callable[[int, Turn], Awaitable[bool]]) -> list[bool]:
    """``run(i, turn)`` for each child ``i``, all at once, their agents in turns; what each returned.

    Raises:
        Exception: the first one a child raised; the other children are cancelled first (their
            sandboxes stopped by their sessions).
    """
    sandboxes = asyncio.Semaphore(LIVE)
    turns: list[Turn] = []
    for i in range(count):
        turns.append(Turn(turns[i - 1].over if i else None, sandboxes))

    async def one(i: int) -> bool:
        try:
            return await run(i, turns[i])
        finally:
            turns[i].hand_over()

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(i)) for i in range(count)]
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]
