"""Which of kvwatch's modules one live line passes through, from the transport's read to the stream's
event: a local host's collector, one SGLang decode line appended to its server log, every function
called in any thread from the append until the bus has published the line's `sample` event, then the
SSE framing of that event (app/api/stream.py). Prints the modules in the order first entered and their
count (ARCHITECTURE.md, "One live line").

usage: PYTHONPATH=. python bench/live_path_modules.py
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from kvwatch.app.api.stream import _event
from kvwatch.app.bus import EventBus, Published
from kvwatch.app.config import HostConfig, parse_config
from kvwatch.app.pipeline.collector import HostCollector
from kvwatch.app.store import open_store

ROOT = Path(__file__).resolve().parents[1]
LINE = ("[2026-02-24 12:00:{s:02d} TP0] Decode batch, #running-req: 72, #token: 153179, token usage: 0.96, "
        "cuda graph: True, gen throughput (token/s): 931.50, #queue-req: 79\n")


class ModuleTrail:
    """The project's source files entered by any thread while recording, in first-entered order."""

    def __init__(self) -> None:
        self.recording = False
        self.seen: dict[str, None] = {}

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if not self.recording or event != "call":
            return
        path = frame.f_code.co_filename
        if path.startswith(str(ROOT)) and "/bench/" not in path and "/.venv" not in path:
            self.seen.setdefault(str(Path(path).relative_to(ROOT)), None)


class WatchedBus(EventBus):
    def __init__(self) -> None:
        super().__init__()
        self.sampled = threading.Event()
        self.last: Published | None = None

    def publish(self, event: str, data: Any) -> Published:
        item = super().publish(event, data)
        if event == "sample":
            self.last = item
            self.sampled.set()
        return item


def main() -> None:
    trail = ModuleTrail()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        log.write_text(LINE.format(s=0))
        config = parse_config({"server": {"data_dir": tmp}, "hosts": [
            {"name": "local", "ssh": "local", "server_log": str(log)}]})
        store = open_store(str(Path(tmp) / "kvwatch.db"))
        bus = WatchedBus()
        collector = HostCollector(config.hosts[0], store, bus, HostConfig.open_transport, 0.05)
        threading.setprofile(trail)  # before the collector's threads start: they inherit it
        sys.setprofile(trail)
        collector.start()
        try:
            if not bus.sampled.wait(30):
                sys.exit("the first line was never published")
            time.sleep(1.0)  # start-up work done: only the next line's path is recorded
            bus.sampled.clear()
            trail.recording = True
            with log.open("a") as out:
                out.write(LINE.format(s=1))
            if not bus.sampled.wait(30):
                sys.exit("the appended line was never published")
            assert bus.last is not None
            _event(bus.last)  # the SSE framing, as the stream sends it
            trail.recording = False
        finally:
            threading.setprofile(None)  # type: ignore[arg-type]
            sys.setprofile(None)
            collector.stop()
            store.close()
    for path in trail.seen:
        print(path)
    print(f"{len(trail.seen)} modules")


if __name__ == "__main__":
    main()
