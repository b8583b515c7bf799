"""Which of kvwatch's modules one live line passes through, from the transport's read to the stream's
event (ARCHITECTURE.md, "One live line"): a local host's collector, one SGLang decode line appended to
its server log, then the SSE framing of the `sample` event the bus publishes for it. Two counts, by
one profile hook on every thread:

- all threads: every module any thread enters from the append until the SSE framing is done. This
  also counts what merely runs in the same instant (the host loop's checks of its other schedules,
  its health counters, the wake-up stream, the clock report after the commit): the count the issue
  (#32) was first measured by.
- the line's path: a module counts when one of its functions is called with, or returns, a value
  that carries the appended line's content (the raw bytes or text, a substring of it, a value parsed
  from it, a record, row, batch or event holding one), from the append until the bus has published
  the line's `sample` event, plus the SSE framing of that event. Values are looked for in a call's
  explicit arguments (never `self`: an object's own state may hold the line long after it passed) and
  in its return value, through tuples, lists, dicts, sets and dataclasses a few levels deep. The
  appended line carries values the first line does not (MARKERS), so nothing the collector held
  before the append can match. What only schedules, counts or wakes (the wake-up stream carries one
  newline byte, not the line) does not count: the line does not pass through it.

`measure()` returns both lists; tests/meta/test_live_path.py checks the line's path against the
stages ARCHITECTURE.md declares.

usage: PYTHONPATH=. python bench/live_path_modules.py
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from kvwatch.app.api.stream import _event
from kvwatch.app.bus import EventBus, Published
from kvwatch.app.config import HostConfig, parse_config
from kvwatch.app.pipeline.collector import HostCollector
from kvwatch.app.store import open_store

ROOT = Path(__file__).resolve().parents[1]
FIRST = ("[2026-02-24 12:00:00 TP0] Decode batch, #running-req: 72, #token: 153179, token usage: 0.96, "
         "cuda graph: True, gen throughput (token/s): 931.50, #queue-req: 79\n")
# The appended line: its stamp and its two distinctive values appear nowhere before it is written.
LINE = ("[2026-02-24 12:00:01 TP0] Decode batch, #running-req: 72, #token: 98765, token usage: 0.96, "
        "cuda graph: True, gen throughput (token/s): 4321.75, #queue-req: 79\n")
TEXT_MARKERS = ("12:00:01", "98765", "4321.75")
NUMBER_MARKERS = (98765.0, 4321.75)  # the line's epoch is added once the first line shows the zone
DEPTH = 5  # a Batch's samples' values sit 3 levels down, a Published's raw JSON 1
WIDTH = 256  # per container: a backlog's lists are not walked whole (one live line is the case here)


class ModuleTrail:
    """Both lists of the project's source files, each in first-entered order."""

    def __init__(self) -> None:
        self.recording = False  # the all-threads window
        self.following = False  # the line's window: append to the sample's publish, then the SSE framing
        self.numbers: set[float] = set(NUMBER_MARKERS)
        self.every: dict[str, None] = {}
        self.path: dict[str, None] = {}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.recording or event not in ("call", "return"):
            return
        source = frame.f_code.co_filename
        if not source.startswith(str(ROOT)) or "/bench/" in source or "/.venv" in source:
            return
        name = str(Path(source).relative_to(ROOT))
        if event == "call":
            self.every.setdefault(name, None)
        if not self.following or name in self.path:
            return
        carried = arg if event == "return" else [v for k, v in frame.f_locals.items() if k not in ("self", "cls")]
        if self.carries(carried, DEPTH):
            self.path.setdefault(name, None)

    def carries(self, value: Any, depth: int) -> bool:
        """Does `value` hold the appended line's content (MARKERS), `depth` containers down at most?"""
        if isinstance(value, str | bytes | bytearray | memoryview):
            text = bytes(value).decode("utf-8", "replace") if not isinstance(value, str) else value
            return any(marker in text for marker in TEXT_MARKERS)
        if isinstance(value, bool):
            return False
        if isinstance(value, int | float):
            return float(value) in self.numbers
        if depth == 0:
            return False
        if isinstance(value, dict):
            items: list[Any] = [*list(value.keys())[:WIDTH], *list(value.values())[:WIDTH]]
        elif isinstance(value, tuple | list | set | frozenset):
            items = list(value)[:WIDTH]
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            items = [getattr(value, f.name, None) for f in dataclasses.fields(value)]
        else:
            return False
        return any(self.carries(item, depth - 1) for item in items)


class WatchedBus(EventBus):
    def __init__(self, trail: ModuleTrail) -> None:
        super().__init__()
        self.trail = trail
        self.sampled = threading.Event()
        self.last: Published | None = None

    def publish(self, event: str, data: Any) -> Published:
        item = super().publish(event, data)
        if event == "sample":
            self.trail.following = False  # published: what the publishing thread does next is not the line's
            self.last = item
            self.sampled.set()
        return item


@dataclass(frozen=True)
class Measured:
    every: list[str]  # all threads
    path: list[str]  # the line's path


def measure() -> Measured:
    trail = ModuleTrail()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        log.write_text(FIRST)
        config = parse_config({"server": {"data_dir": tmp}, "hosts": [
            {"name": "local", "ssh": "local", "server_log": str(log)}]})
        store = open_store(str(Path(tmp) / "kvwatch.db"))
        bus = WatchedBus(trail)
        collector = HostCollector(config.hosts[0], store, bus, HostConfig.open_transport, 0.05)
        threading.setprofile(trail)  # before the collector's threads start: they inherit it
        sys.setprofile(trail)
        collector.start()
        try:
            if not bus.sampled.wait(30) or bus.last is None:
                sys.exit("the first line was never published")
            # The appended line's time as the collector will place it: the first line's, one second on.
            trail.numbers.add(_first_stamp(bus.last) + 1.0)
            time.sleep(1.0)  # start-up work done: only the next line's path is recorded
            bus.sampled.clear()
            trail.following = trail.recording = True
            with log.open("a") as out:
                out.write(LINE)
            if not bus.sampled.wait(30):
                sys.exit("the appended line was never published")
            assert bus.last is not None
            trail.following = True  # the SSE framing, as the stream sends it (this thread only runs it)
            _event(bus.last)
            trail.following = trail.recording = False
        finally:
            threading.setprofile(None)  # type: ignore[arg-type]
            sys.setprofile(None)
            collector.stop()
            store.close()
    return Measured(list(trail.every), list(trail.path))


def _first_stamp(item: Published) -> float:
    """The first line's time as the collector placed it (its zone and skew applied)."""
    points = json.loads(item.raw)["points"]
    return float(next(iter(points.values()))[0][0])


def main() -> None:
    measured = measure()
    print("all threads:")
    for name in measured.every:
        print(f"  {name}")
    print(f"{len(measured.every)} modules")
    print("the line's path:")
    for name in measured.path:
        print(f"  {name}")
    print(f"{len(measured.path)} modules")


if __name__ == "__main__":
    main()
