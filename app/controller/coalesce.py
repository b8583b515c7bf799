"""One answer shared by every caller for a short while: the controller panel's view of a host.

`GET /api/hosts/{name}/controller` needs no token and asks the GPU host (one helper process over SSH)
what runs there. Thirty pages, or thirty requests in a flood, asked thirty times: past sshd's session
limit the shared connection failed and a token holder's restart was refused. Now a request waits for
the one question in flight, or takes an answer (or its error) younger than `max_age`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Coalesced(Generic[T]):
    def __init__(self, max_age: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self.clock = clock
        self.calls = 0  # how many times the underlying question was really asked
        self._lock = threading.Lock()  # held while asking: the others wait for that answer
        self._at: float | None = None
        self._value: T | None = None
        self._error: BaseException | None = None

    def get(self, ask: Callable[[], T]) -> T:
        with self._lock:
            if self._at is None or self.clock() - self._at > self.max_age:
                self.calls += 1
                try:
                    self._value, self._error = ask(), None
                except Exception as exc:  # an error is an answer too: shared, not asked again at once
                    self._value, self._error = None, exc
                self._at = self.clock()
            if self._error is not None:
                raise self._error
            return self._value  # type: ignore[return-value]

    def forget(self) -> None:
        """What runs on the host is about to change (a restart began or ended)."""
        with self._lock:
            self._at = None
