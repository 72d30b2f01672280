"""Redis failing the background loops is logged once when it starts, once a minute
while it lasts and once when it ends, however many loops keep trying."""

from __future__ import annotations

import logging

import pytest

from bot.services.outage import REMIND_EVERY, Outage
from storage.errors import StorageUnavailableError

DOWN = StorageUnavailableError("cannot reach Redis at 127.0.0.1:6379")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(caplog: pytest.LogCaptureFixture) -> Clock:
    """The clock of the ``Outage`` under test; its log is captured."""
    caplog.set_level(logging.INFO, logger="bot.services.outage")
    return Clock()


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.levelname} {r.getMessage()}" for r in caplog.records]


def test_many_loops_failing_log_one_line_then_a_reminder_a_minute(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    outage = Outage(now=clock)
    loops = ("clicks-s0", "clicks-s1", "worker-s0", "scheduler")
    for second in range(int(REMIND_EVERY * 2) + 1):
        clock.now = float(second)
        for loop in loops:
            outage.failed(loop, DOWN)
    assert _lines(caplog) == [
        f"ERROR background work cannot use Redis: {DOWN}; retrying with backoff",
        f"ERROR background work still cannot use Redis after 60 s (4 loops waiting): {DOWN}",
        f"ERROR background work still cannot use Redis after 120 s (4 loops waiting): {DOWN}",
    ]
    assert outage.failing == dict.fromkeys(loops, 121)


def test_the_end_is_logged_once_every_failing_loop_has_used_redis_again(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    outage = Outage(now=clock)
    outage.failed("clicks", DOWN)
    outage.failed("worker", DOWN)
    clock.now = 42.0
    outage.cleared("clicks")
    outage.cleared("scheduler")  # never failed: says nothing
    assert len(caplog.records) == 1 and outage.failing == {"worker": 1}
    outage.cleared("worker")
    assert _lines(caplog)[1:] == ["WARNING background work uses Redis again, after 42 s"]
    outage.failed("worker", DOWN)  # a new outage starts over, and is told again
    assert _lines(caplog)[2:] == [
        f"ERROR background work cannot use Redis: {DOWN}; retrying with backoff"
    ]
    assert outage.failing == {"worker": 1}


def test_a_failing_loop_waits_longer_each_time_up_to_five_seconds() -> None:
    outage = Outage()
    waits = [outage.failed("clicks", DOWN) for _ in range(8)]
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0
    assert all(2.5 <= wait <= 5.0 for wait in waits[3:])
    outage.cleared("clicks")
    assert outage.failed("clicks", DOWN) <= 1.0  # a new outage starts from the shortest
    # An outage of hours: the wait stays at most 5 s (2**n would overflow a float).
    assert max(outage.failed("worker", DOWN) for _ in range(2_000)) <= 5.0


def test_a_loop_that_stops_while_failing_ends_the_outage_unreported(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """A request watch stops when its last long-poll leaves: it does not know Redis is
    back, so nothing says so; the next failure is a new outage."""
    outage = Outage(now=clock)
    outage.failed("request watch 0", DOWN)
    outage.forget("request watch 0")
    assert outage.failing == {} and len(caplog.records) == 1
    clock.now = 3.0
    outage.failed("scheduler", DOWN)
    assert (
        _lines(caplog)
        == [f"ERROR background work cannot use Redis: {DOWN}; retrying with backoff"] * 2
    )
