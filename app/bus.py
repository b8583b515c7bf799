"""Fan-out of live events to SSE subscribers. Publishing is thread-safe; subscribers are asyncio.

One fan-out for every client: an event is numbered and JSON-encoded once, kept in a bounded replay
log, and the same object is offered to every subscriber; nothing on this path queries the store.
Every event's id is `<epoch>-<seq>`: the epoch names this bus (one server process), the sequence is
the bus's count of published events. A page that reconnects with `Last-Event-ID` is replayed what it
missed while that is still in the log; otherwise `replay_after` says so and the page backfills from
`/api/series`.

The log serves pages that were listening: a resume needs an id this bus sent, so with nobody
subscribed for REPLAY_IDLE_S it is emptied and stops keeping events until a page subscribes again (a
page away longer backfills, as above). A process without the web app (`kvwatch collect`) keeps none.

Backpressure: a subscriber's queue is bounded. One that falls a whole queue behind (a stalled tab,
a slow link) is dropped instead of growing server memory: its stream ends, the browser reconnects
with its last id and is replayed the rest, so a slow client loses nothing that is still in the log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any

log = logging.getLogger(__name__)

SUBSCRIBER_QUEUE = 1000
REPLAY_EVENTS = 20_000
# The log is bounded by size too: at 64 hosts an event is ~800 bytes of JSON and 20,000 of them held
# 16 MB, the largest part of a fleet collector's memory (bench/collect_fleet.py). 4 MiB is ~35 s of a
# 64-host fleet and hours of one host; a page away longer backfills from /api/series.
REPLAY_BYTES = 4 * 2**20
EVENT_OVERHEAD_BYTES = 150  # a Published and its str header beside the JSON itself
# A browser reconnects within seconds (a blip, a dropped slow client); 5 minutes also covers a laptop
# lid. Past it, the 4 MiB above would be held for hours for nobody: `kvwatch serve` with no page open.
REPLAY_IDLE_S = 300.0


@dataclass(frozen=True, slots=True)
class Published:
    seq: int
    event: str
    raw: str  # the event's data as JSON, encoded once for all subscribers (and the log); "" when none wanted it
    epoch: str
    host: str | None = None  # the host the event is about, when its data names one (a stream's filter)

    @property
    def id(self) -> str:
        return f"{self.epoch}-{self.seq}"


class Subscription:
    """One SSE client's bounded queue; `None` in it means the client fell behind and was dropped."""

    def __init__(self, loop: asyncio.AbstractEventLoop, size: int) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[Published | None] = asyncio.Queue(size)
        self.dropped = False

    async def next(self) -> Published | None:
        return await self.queue.get()

    def offer(self, item: Published) -> None:
        """Runs on the subscriber's loop. Full queue: empty it and leave only the drop mark."""
        if self.dropped:
            return
        if self.queue.full():
            self.dropped = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(item)


@dataclass(frozen=True, slots=True)
class Replay:
    """What a (re)connecting client gets before live events: the missed ones, or `complete=False`
    when the log no longer holds all of them (another server process, or too long away)."""

    events: list[Published]
    complete: bool
    position: str  # the id after which live events follow the replay: where a new client stands


class EventBus:
    def __init__(self, replay_events: int | None = None, queue_size: int | None = None,
                 replay_bytes: int | None = None, replay_idle_s: float = REPLAY_IDLE_S) -> None:
        """`replay_idle_s`: how long the log is kept with no subscriber (0: only while one is)."""
        # Seconds since the epoch in base 36: a restarted server never reuses an old id's meaning.
        self.epoch = _base36(time.time_ns() // 1_000_000)
        self.queue_size = queue_size or SUBSCRIBER_QUEUE
        self._seq = 0
        self._log: deque[Published] = deque()
        self._log_events = replay_events or REPLAY_EVENTS
        self._log_budget = replay_bytes or REPLAY_BYTES
        self._log_bytes = 0
        self._replay_idle_s = replay_idle_s
        self._last_listened = time.monotonic()  # a resume right after start still works (tests, a reload)
        self._subscribers: dict[int, Subscription] = {}
        self._listeners: tuple[Callable[[str, Any], None], ...] = ()
        self._lock = threading.Lock()

    @property
    def last_id(self) -> str:
        return f"{self.epoch}-{self._seq}"

    def subscribe(self, last_event_id: str | None = None) -> tuple[Subscription, Replay]:
        """A new subscriber, and atomically with it what it missed after `last_event_id`."""
        subscription = Subscription(asyncio.get_running_loop(), self.queue_size)
        with self._lock:
            replay = self._replay_after(last_event_id)
            self._subscribers[id(subscription)] = subscription
        return subscription, replay

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers.pop(id(subscription), None)
            self._last_listened = time.monotonic()

    @property
    def listened(self) -> bool:
        """Whether a stream client is subscribed now."""
        return bool(self._subscribers)

    def add_listener(self, listener: Callable[[str, Any], None]) -> None:
        """Called with every published event's name and data, in the publishing thread, after the bus's
        lock is released: an in-process follower (the fleet's rows) that must stay cheap."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: Callable[[str, Any], None]) -> None:
        with self._lock:
            self._listeners = tuple(known for known in self._listeners if known != listener)

    def publish(self, event: str, data: Any) -> Published:
        # Encoded only for a page that listens or may resume (a catch-up publishes thousands of points a
        # second, often with no page open); outside the lock, unless a page came in meanwhile.
        raw = _json(data) if self._wanted() else None
        with self._lock:  # numbering and queueing in one order, whichever thread publishes
            self._seq += 1
            host = data.get("host") if isinstance(data, dict) else None
            wanted = self._wanted()
            if wanted and raw is None:
                raw = _json(data)
            item = Published(self._seq, event, raw or "", self.epoch, host if isinstance(host, str) else None)
            if wanted:
                self._keep(item)
            elif self._log:
                self._log.clear()
                self._log_bytes = 0
            closed = [s for s in self._subscribers.values() if not _offer_threadsafe(s, item)]
            for subscription in closed:
                self._subscribers.pop(id(subscription), None)
                self._last_listened = time.monotonic()
            listeners = self._listeners
        for listener in listeners:
            try:
                listener(event, data)
            except Exception:  # a follower's bug never stops the stream or the collector publishing
                log.exception("bus listener %r failed on %s", listener, event)
        return item

    def _wanted(self) -> bool:
        """A page listens, or listened recently enough to resume from the replay log."""
        return bool(self._subscribers) or time.monotonic() - self._last_listened <= self._replay_idle_s

    def _keep(self, item: Published) -> None:
        """Into the replay log; the oldest events leave while it is over its count or size (the newest
        stays even alone: a resume from just before it must still work)."""
        self._log.append(item)
        self._log_bytes += len(item.raw) + EVENT_OVERHEAD_BYTES
        while len(self._log) > 1 and (len(self._log) > self._log_events or self._log_bytes > self._log_budget):
            self._log_bytes -= len(self._log.popleft().raw) + EVENT_OVERHEAD_BYTES

    def _replay_after(self, last_event_id: str | None) -> Replay:
        if not last_event_id:
            return Replay([], True, self.last_id)
        epoch, _, seq_text = last_event_id.rpartition("-")
        if epoch != self.epoch or not seq_text.isdigit():
            return Replay([], False, self.last_id)
        seq = int(seq_text)
        if seq >= self._seq:
            return Replay([], seq == self._seq, self.last_id)
        oldest = self._log[0].seq if self._log else self._seq + 1
        if oldest > seq + 1:
            return Replay([], False, self.last_id)
        missed = list(islice(self._log, seq + 1 - oldest, None))  # the log's seqs are consecutive
        return Replay(missed, True, last_event_id)


def _offer_threadsafe(subscription: Subscription, item: Published) -> bool:
    try:
        subscription.loop.call_soon_threadsafe(subscription.offer, item)
        return True
    except RuntimeError:  # that subscriber's loop has closed
        return False


def _json(data: Any) -> str:
    """Strict JSON, as fastapi.sse sends it: NaN and infinities (which JSON.parse rejects) as null."""
    try:
        return json.dumps(data, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        # FastAPI (tens of MB resident) is for this rare case only: a collecting process goes without it.
        from fastapi.encoders import jsonable_encoder

        return json.dumps(_finite(jsonable_encoder(data)), separators=(",", ":"))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out or "0"
