"""The live stream resumes: every event has an id, a reconnect is replayed what it missed from a
bounded log (or told it cannot be), and a stalled client is dropped instead of growing memory."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from kvwatch.app.bus import EventBus
from kvwatch.app.main import create_app
from tests.app.slice_helpers import start_services, wait_until


def run_apart(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """asyncio.run in a thread of its own: after a Playwright test in the same session the main thread
    has Playwright's event loop running, and asyncio.run refuses to start there."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()


def test_ids_are_consecutive_and_a_resume_replays_exactly_the_missed_events() -> None:
    async def scenario() -> None:
        bus = EventBus(replay_events=100)
        first = [bus.publish("sample", {"n": n}) for n in range(5)]
        assert [int(e.id.rsplit("-", 1)[1]) for e in first] == [1, 2, 3, 4, 5]
        subscription, replay = bus.subscribe(first[1].id)
        assert replay.complete and [json.loads(e.raw)["n"] for e in replay.events] == [2, 3, 4]
        bus.publish("alert", {"n": 5})
        live = await asyncio.wait_for(subscription.next(), 1)
        assert live is not None and live.event == "alert" and live.id == f"{bus.epoch}-6"
        assert bus.subscribe(bus.last_id)[1] == type(replay)([], True, bus.last_id)
        assert bus.subscribe(None)[1].position == bus.last_id

    run_apart(scenario)


def test_a_resume_the_log_cannot_serve_says_so() -> None:
    async def scenario() -> None:
        bus = EventBus(replay_events=3)
        ids = [bus.publish("sample", {"n": n}).id for n in range(10)]
        assert not bus.subscribe(ids[2])[1].complete  # events 4..6 have left the log
        kept = bus.subscribe(ids[6])[1]  # 8, 9, 10 are all there
        assert kept.complete and [e.seq for e in kept.events] == [8, 9, 10]
        assert not bus.subscribe("another-server-7")[1].complete
        assert not bus.subscribe("garbage")[1].complete

    run_apart(scenario)


def test_the_log_is_bounded_by_size_and_serves_what_it_still_holds() -> None:
    async def scenario() -> None:
        bus = EventBus(replay_events=1000, replay_bytes=5_000)
        ids = [bus.publish("sample", {"pad": "x" * 900, "n": n}).id for n in range(20)]
        assert not bus.subscribe(ids[5])[1].complete  # 20 events of ~1 kB do not fit in 5 kB
        kept = bus.subscribe(ids[-4])[1]
        assert kept.complete and [json.loads(e.raw)["n"] for e in kept.events] == [17, 18, 19]
        huge = bus.publish("sample", {"pad": "y" * 50_000})  # over the budget alone: still replayable
        resumed = bus.subscribe(ids[-1])[1]
        assert resumed.complete and [e.id for e in resumed.events] == [huge.id]

    run_apart(scenario)


def test_a_stalled_subscriber_is_dropped_and_its_queue_stays_bounded() -> None:
    async def scenario() -> None:
        bus = EventBus(queue_size=10)
        stalled, _ = bus.subscribe()
        reading, _ = bus.subscribe()
        got: list[int] = []
        for n in range(50):
            bus.publish("sample", {"n": n})
            await asyncio.sleep(0)  # the loop runs the offers; only `reading` takes them
            item = await reading.next()
            assert item is not None
            got.append(item.seq)
        assert got == list(range(1, 51))
        assert stalled.dropped and stalled.queue.qsize() == 1 and await stalled.next() is None
        assert reading.queue.maxsize == 10 and not reading.dropped

    run_apart(scenario)


def read_events(url: str, headers: dict[str, str], want: int, out: list[dict[str, Any]]) -> None:
    """Parse SSE frames until `want` events other than hello (and hello itself) are read."""
    with httpx.stream("GET", url, headers=headers, timeout=10) as response:
        frame: dict[str, Any] = {}
        for line in response.iter_lines():
            if line.startswith(("event: ", "data: ", "id: ")):
                key, _, value = line.partition(": ")
                frame[key] = value
            elif not line and frame:
                out.append(frame)
                frame = {}
                if sum(f["event"] != "hello" for f in out) >= want:
                    return


def test_reconnect_with_last_event_id_over_http_gets_the_missed_events(tmp_path: Path, serve_app: Any) -> None:
    services = start_services(tmp_path)
    server = serve_app(create_app(services, manage_collectors=False))
    url = f"{server.url}/api/stream"
    first: list[dict[str, Any]] = []
    listener = threading.Thread(target=read_events, args=(url, {}, 2, first), daemon=True)
    listener.start()
    wait_until(lambda: len(services.bus._subscribers) == 1)
    for n in range(2):
        services.bus.publish("sample", {"host": "local", "points": {"running_req": [[n, n]]}})
    listener.join(10)
    assert [f["event"] for f in first] == ["hello", "sample", "sample"]
    assert json.loads(first[0]["data"])["resumed_from"] is None
    assert first[0]["id"] == f"{services.bus.epoch}-0"  # nothing published before it connected
    wait_until(lambda: len(services.bus._subscribers) == 0)

    for n in range(2, 6):  # published while nobody listens
        services.bus.publish("sample", {"host": "local", "points": {"running_req": [[n, n]]}})
    again: list[dict[str, Any]] = []
    read_events(url, {"Last-Event-ID": first[-1]["id"]}, 4, again)
    hello = json.loads(again[0]["data"])
    assert hello["resumed_from"] == first[-1]["id"] and hello["replayed"] is True
    assert [json.loads(f["data"])["points"]["running_req"][0][1] for f in again[1:]] == [2, 3, 4, 5]
    ids = [int(f["id"].rsplit("-", 1)[1]) for f in first[1:] + again[1:]]
    assert ids == list(range(ids[0], ids[0] + 6))

    gone: list[dict[str, Any]] = []
    read_events(f"{url}?last_event_id=old-server-3", {}, 0, gone)
    assert json.loads(gone[0]["data"])["replayed"] is False
