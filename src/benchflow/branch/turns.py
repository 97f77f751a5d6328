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

The sandboxes started ahead come up in whatever order the engine finishes them: a :class:`Ready`
hands each to the next child in order as it comes up, so no child waits for "its" sandbox while
another one, started at the same moment, is ready and idle.

Used only where every child stands alone (see ``forks._in_turns``): no nested fork under them (those
run in the child's sandbox after its verifier), no ``--stop-on-child-failure`` (the next child would
start before the verdict), a backend that starts sandboxes from a snapshot, and no compose services
or declared environment state (those live outside the sandbox snapshot).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Generic, TypeVar

LIVE = 3
"""Children's sandboxes alive at once besides the trial's own: the one verifying, the one whose agent
runs, and one started ahead."""

T = TypeVar("T")


class Turn:
    """One child's turn at running its agent."""

    def __init__(self, before: asyncio.Event | None) -> None:
        self._before = before
        self.over = asyncio.Event()

    async def wait(self) -> None:
        """Until the previous child's agent phase is over."""
        if self._before is not None:
            await self._before.wait()

    def hand_over(self) -> None:
        """This child's agent phase is over: the next child's agent may start (idempotent)."""
        self.over.set()


async def in_turns(count: int, run: Callable[[int, Turn], Awaitable[bool]]) -> list[bool]:
    """``run(i, turn)`` for each child ``i``, all at once, their agents in turns; what each returned.

    Raises:
        Exception: the first one a child raised; the other children are cancelled first (their
            sandboxes stopped by their sessions).
    """
    turns: list[Turn] = []
    for i in range(count):
        turns.append(Turn(turns[i - 1].over if i else None))

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


class Ready(Generic[T]):
    """``count`` sandboxes opened ahead (``open()``, at most :data:`LIVE` alive at once), each lent to
    the next taker, in the takers' order, as it comes up. Use as ``async with Ready(...) as ready``:
    leaving the block closes every one still open (a cancelled child's too)."""

    def __init__(self, open_one: Callable[[], AbstractAsyncContextManager[T]], count: int) -> None:
        self._open = open_one
        self._count = count
        self._up: asyncio.Queue[tuple[T | None, BaseException | None, asyncio.Event]] = asyncio.Queue()
        self._tasks: list[asyncio.Task] = []

    async def __aenter__(self) -> Ready[T]:
        live = asyncio.Semaphore(LIVE)
        self._tasks = [asyncio.create_task(self._hold(live)) for _ in range(self._count)]
        return self

    async def __aexit__(self, *_exc: object) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _hold(self, live: asyncio.Semaphore) -> None:
        """Open one, lend it, close it once given back (a failed open is lent as its exception and
        keeps its place while the taker runs without it)."""
        done = asyncio.Event()
        async with live, contextlib.AsyncExitStack() as held:
            try:
                box, failure = await held.enter_async_context(self._open()), None
            except Exception as exc:  # noqa: BLE001 - lent as it is: the taker starts one in its turn
                box, failure = None, exc
            self._up.put_nowait((box, failure, done))
            await done.wait()

    @contextlib.asynccontextmanager
    async def take(self) -> AsyncIterator[T | BaseException]:
        """The next sandbox to come up (or why it did not), given back when the block ends."""
        box, failure, done = await self._up.get()
        try:
            yield box if failure is None else failure
        finally:
            done.set()
