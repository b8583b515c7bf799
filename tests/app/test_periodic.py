"""The one background-loop helper: timing, errors kept inside the loop, a prompt stop, wake-ups."""

from __future__ import annotations

import itertools
import logging
import threading
import time

import pytest

from kvwatch.collectors.periodic import Periodic


def wait_until(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_ticks_at_once_then_every_interval() -> None:
    ticks: list[float] = []
    loop = Periodic("t", lambda: ticks.append(time.monotonic()), 0.05)
    loop.start()
    wait_until(lambda: len(ticks) >= 4)
    loop.stop()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert min(gaps) >= 0.045


def test_first_after_none_waits_one_interval() -> None:
    ticks: list[float] = []
    started = time.monotonic()
    loop = Periodic("t", lambda: ticks.append(time.monotonic()), 0.3, first_after=None)
    loop.start()
    wait_until(lambda: ticks)
    loop.stop()
    assert ticks[0] - started >= 0.29


def test_a_failing_tick_is_logged_and_the_loop_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    calls = []

    def tick() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("store away")

    loop = Periodic("relay-x", tick, 0.02, failure="cannot read the store")
    with caplog.at_level(logging.ERROR):
        loop.start()
        wait_until(lambda: len(calls) >= 3)
        loop.stop()
    assert "relay-x: cannot read the store" in caplog.text
    assert "OSError: store away" in caplog.text


def test_stop_ends_a_long_wait_at_once_and_the_thread_is_gone() -> None:
    loop = Periodic("t", lambda: None, 3600.0, first_after=3600.0)
    loop.start()
    assert loop.running
    began = time.monotonic()
    loop.stop()
    assert time.monotonic() - began < 1.0
    assert not loop.running and loop.stopping


def test_wake_runs_the_next_tick_now() -> None:
    ticked = threading.Event()
    loop = Periodic("t", ticked.set, 3600.0, first_after=3600.0)
    loop.start()
    loop.wake()
    assert ticked.wait(2.0)
    loop.stop()


def test_an_interval_can_be_a_function_read_before_each_wait() -> None:
    intervals = iter([0.01, 0.01, 3600.0])
    ticks: list[int] = []
    loop = Periodic("t", lambda: ticks.append(1), lambda: next(intervals, 3600.0))
    loop.start()
    wait_until(lambda: len(ticks) >= 3)
    time.sleep(0.1)
    loop.stop(timeout=1)
    assert len(ticks) == 3


def test_a_loop_starts_once() -> None:
    loop = Periodic("t", lambda: None, 1.0)
    loop.start()
    with pytest.raises(RuntimeError, match="started twice"):
        loop.start()
    loop.stop()


def test_a_stop_ends_a_ticks_own_wait_at_once() -> None:
    waited: list[tuple[bool, float]] = []

    def tick() -> None:
        start = time.monotonic()
        stopping = loop.wait(30)
        waited.append((stopping, time.monotonic() - start))

    loop = Periodic("t", tick, 60)
    loop.start()
    time.sleep(0.1)
    loop.stop(timeout=5)
    assert not loop.running
    assert len(waited) == 1 and waited[0][0] and waited[0][1] < 5


def test_a_wait_without_a_stop_lasts_its_seconds() -> None:
    loop = Periodic("t", lambda: None, 60)
    start = time.monotonic()
    assert loop.wait(0.05) is False
    assert time.monotonic() - start >= 0.045
