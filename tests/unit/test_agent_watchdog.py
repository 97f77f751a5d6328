"""Wall-clock and idle watchdog decisions (contracts §3.9, §3.12), on a fake clock."""

from __future__ import annotations

import pytest

from benchflow.agents.watchdog import (
    Activity,
    Watchdog,
    default_idle_timeout_sec,
    poll_interval,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(clock: Clock, pending=(), **budgets) -> tuple[Activity, Watchdog]:
    act = Activity(started_at=clock.now, last_activity=clock.now, pending_tool_call_ids=lambda: list(pending))
    return act, Watchdog(act, clock=clock, **budgets)


def test_idle_trips_after_silence_and_activity_resets_it():
    clock = Clock()
    act, dog = make(clock, timeout_sec=None, idle_timeout_sec=10)
    clock.now += 9
    assert dog.check() is None
    act.last_activity = clock.now  # a chunk arrived
    clock.now += 9.5
    assert dog.check() is None
    clock.now += 1
    trip = dog.check()
    assert trip.kind == "idle" and trip.error.startswith("Agent idle for 10")
    assert set(trip.info) == {"reason", "idle_timeout_sec", "idle_duration_sec", "wall_clock_elapsed_sec",
                              "n_tool_calls", "n_message_chunks", "n_thought_chunks", "last_activity_at"}


def test_in_flight_tool_call_holds_off_idle_but_not_wall_clock():
    clock = Clock()
    _, dog = make(clock, pending=["tc_1"], timeout_sec=100, idle_timeout_sec=10)
    clock.now += 50
    assert dog.check() is None
    clock.now += 50
    trip = dog.check()
    assert trip.kind == "wall_clock" and trip.info["pending_tool_call_ids"] == ["tc_1"]
    assert trip.error == "Agent prompt exceeded wall-clock budget 100s"


@pytest.mark.parametrize("budgets", [{"timeout_sec": None, "idle_timeout_sec": None},
                                     {"timeout_sec": 0, "idle_timeout_sec": 0}])
def test_no_budget_never_trips(budgets):
    clock = Clock()
    _, dog = make(clock, **budgets)
    clock.now += 10**6
    assert dog.check() is None


@pytest.mark.parametrize(("idle", "timeout", "expected"), [
    (600, None, 30), (8, None, 2), (2, 3, 1), (None, None, 30), (None, 40, 10)])
def test_poll_interval(idle, timeout, expected):
    assert poll_interval(idle, timeout) == expected


def test_default_idle_timeout_is_longer_at_high_effort():
    assert [default_idle_timeout_sec(e) for e in (None, "high", "xhigh", "max")] == [600, 600, 1800, 1800]
