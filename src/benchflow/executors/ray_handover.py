"""Run slots handed on between attempts on one node (``--executor ray``): the prepared-ahead attempt.

In-process, the ``--warm-pool`` attempt (one that finds every run slot taken) starts its sandbox at
once and takes whichever slot frees first. On a cluster its sandbox must be made on the node whose
slot it will take, which is not known in advance; the first sign is a running attempt's verifier
starting (its node reports it). So the waiting attempt is paired with the first running attempt
of its shape (its placement group's bundle) whose verifier has started, its *donor*: it is sent at
once to the donor's node, *held*, makes its sandbox there while the verifier runs, and takes the
donor's run slot and placement group over (no new placement, no slot given back) the moment the
donor's run phases end. A donor that ends some other way (lost, cancelled) hands them over all the
same: the held attempt on that node sees what became of it. :class:`Handovers` keeps the pairs;
:class:`.ray_executor.RayExecutor` holds the slots and groups.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Shape = tuple[tuple[str, float], ...]
"""A placement-group bundle as a hashable key."""


@dataclass(eq=False)
class Running:
    """An attempt in its run phases: where, what it holds, and the held attempt that takes it over."""

    node: str
    shape: Shape
    placement: Any
    successor: asyncio.Future | None = None
    """The held attempt's: set when this attempt's run phases end."""
    over: bool = False
    """The run phases are over: nothing left to hand over."""


@dataclass
class Handovers:
    donors: list[Running] = field(default_factory=list)
    """Running attempts whose verifier has started and that no held attempt takes over yet."""
    waiters: list[tuple[Shape, asyncio.Future]] = field(default_factory=list)
    """Attempts waiting for a run slot: set to a donor of their shape if one comes first."""

    async def run_slot(self, run_slot: asyncio.Semaphore | None, shape: Shape) -> Running | None:
        """Take a free run slot (None); when there is none, a donor of ``shape``, whichever comes first."""
        if run_slot is None:
            return None
        if not run_slot.locked():
            await run_slot.acquire()
            return None
        donor = next((d for d in self.donors if d.shape == shape), None)
        if donor is not None:
            return self._pair(donor)
        paired: asyncio.Future = asyncio.get_running_loop().create_future()
        self.waiters.append((shape, paired))
        acquire = asyncio.ensure_future(run_slot.acquire())
        try:
            await asyncio.wait({acquire, paired}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled: nothing taken
            _give_back(acquire, run_slot)
            if paired.done():
                paired.result().successor.cancel()  # the donor keeps what it holds
            raise
        finally:
            with contextlib.suppress(ValueError):
                self.waiters.remove((shape, paired))
        if paired.done():
            _give_back(acquire, run_slot)  # the donor's slot instead
            return paired.result()
        paired.cancel()
        return None

    def _pair(self, donor: Running) -> Running:
        with contextlib.suppress(ValueError):
            self.donors.remove(donor)
        donor.successor = asyncio.get_running_loop().create_future()
        return donor

    async def offer_when_verifying(self, verifying: Awaitable[Any], me: Running) -> None:
        """Once ``me``'s verifier starts: to an attempt waiting for a run slot, else among the donors."""
        with contextlib.suppress(Exception):
            await verifying
        if me.over or me.successor is not None:
            return
        for shape, paired in self.waiters:
            if shape == me.shape and not paired.done():
                paired.set_result(self._pair(me))
                return
        self.donors.append(me)

    @staticmethod
    async def take_over(donor: Running, outcome: asyncio.Future, give_back: Callable[[], None]) -> bool:
        """Wait for ``donor``'s run phases to end: True when its run slot and placement group are
        now the caller's; False when the caller's attempt ended first (its sandbox could not be
        made): the donor keeps them. Cancelled after the handover, ``give_back`` disposes of them."""
        handed = donor.successor
        assert handed is not None
        try:
            await asyncio.wait({handed, outcome}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            if handed.done() and not handed.cancelled():
                give_back()
            handed.cancel()
            raise
        if handed.done():
            return True
        handed.cancel()
        return False

    def end(self, me: Running) -> bool:
        """``me``'s run phases are over: True when its held successor takes its slot and group over."""
        me.over = True
        with contextlib.suppress(ValueError):
            self.donors.remove(me)
        if me.successor is not None and not me.successor.done():
            me.successor.set_result(None)
            return True
        return False

    @staticmethod
    def never_took_over(donor: Running | None) -> None:
        """The held attempt ended before the handover: the donor keeps its slot and group."""
        if donor is not None and donor.successor is not None and not donor.successor.done():
            donor.successor.cancel()


def _give_back(acquire: asyncio.Future, run_slot: asyncio.Semaphore) -> None:
    """A run-slot acquire no longer wanted: released if it got the slot, else cancelled (a pending
    acquire already woken for a slot passes it on itself)."""
    if not acquire.done():
        acquire.cancel()
    elif not acquire.cancelled() and acquire.exception() is None:
        run_slot.release()
