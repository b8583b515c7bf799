"""One shape for every background loop: a named daemon thread that runs a tick every `interval`
seconds until stopped. The app's loops (relay, heartbeat, retention, alerts, the webhook sender) and
each host's collection loop (collectors/host.py: a tick is one connection's life, the interval the
reconnect backoff) use it; it lives here because collectors/ imports nothing from app/.

A tick's exception is logged and the next tick comes on time: a store hiccup must never end a loop
for good. `stop()` is prompt (one event ends any wait) and `stopping` lets a long tick give up early.
`wake()` runs the next tick now (a lease changed hands, an alert must be evaluated at once).
`wait(seconds)` is a tick's own pause (a poll interval, a retry's backoff) that a stop ends at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Interval = float | Callable[[], float]


class Periodic:
    def __init__(self, name: str, tick: Callable[[], object], interval: Interval, *,
                 first_after: float | None = 0.0, failure: str = "failed; next try at the next tick") -> None:
        """`first_after`: seconds before the first tick (0: at once; None: one interval).
        `failure`: what the log line says after the loop's name when a tick raises."""
        self.name = name
        self._tick = tick
        self._interval = interval
        self._first_after = first_after
        self._failure = failure
        self._stopped = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopping(self) -> bool:
        return self._stopped.is_set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def interval(self) -> float:
        return self._interval() if callable(self._interval) else self._interval

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"{self.name}: started twice")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def wait(self, seconds: float) -> bool:
        """Inside a tick: pause up to `seconds`; True when the loop is stopping (give up the tick)."""
        return self._stopped.wait(seconds)

    def request_stop(self) -> None:
        """Ask the loop to end after the tick in progress, without waiting: many loops stopped one after
        the other each wait out their tick's current pause, so stop them all first, then `stop()` each."""
        self._stopped.set()
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        """Ends the loop after the tick in progress; waits for it at most `timeout` (None: an interval + 5 s)."""
        self.request_stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self.interval() + 5 if timeout is None else timeout)

    def _run(self) -> None:
        wait = self.interval() if self._first_after is None else self._first_after
        while not self._sleep(wait):
            try:
                self._tick()
            except Exception:  # the thread's boundary: log it, keep the loop alive
                log.exception("%s: %s", self.name, self._failure)
            wait = self.interval()

    def _sleep(self, seconds: float) -> bool:
        """True when the loop must end."""
        if seconds > 0:
            self._wake.wait(seconds)
        self._wake.clear()
        return self._stopped.is_set()
