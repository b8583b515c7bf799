"""What the sink tells the page beyond the stored rows: a sample's position among the points of its
stamp (two lines logged in one second are two samples), and a run's first decode sample as run news."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kvwatch.app.bus import EventBus
from kvwatch.app.pipeline.sink import StoreSink
from kvwatch.app.store import Store
from kvwatch.collectors.base import Line
from tests.browser.world import DECODE, READY, stamp

T0 = 1_796_000_000.0
LOG = "/logs/server.log"


def decode(t: float, dp: int, tps: float) -> str:
    return DECODE.format(ts=stamp(t), dp=dp, running=60, token=150_000, usage=0.9, tps=tps, queue=3).rstrip("\n")


def published(store: Store, deliveries: list[list[str]]) -> list[tuple[str, dict[str, Any]]]:
    """The stream's events while the sink is handed `deliveries`, each a list of log lines."""

    async def play() -> list[tuple[str, dict[str, Any]]]:
        bus = EventBus()
        subscription, _ = bus.subscribe()
        sink = StoreSink("gpu1", store, bus, timezone="UTC")
        sink.load_state("gpu1", "server_log", LOG)
        line_no = 0
        for texts in deliveries:
            lines = []
            for text in texts:
                line_no += 1
                lines.append(Line("server_log", 1, line_no * 200, line_no, text))
            sink.deliver("gpu1", "server_log", LOG, lines, None)
        await asyncio.sleep(0)  # the bus offers each event on this loop
        out = []
        while not subscription.queue.empty():
            item = subscription.queue.get_nowait()
            assert item is not None
            out.append((item.event, json.loads(item.raw)))
        return out

    # A thread of its own: a browser test before it on this worker may have left an event loop running.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, play()).result(timeout=60)


Events = list[tuple[str, dict[str, Any]]]


def of(kind: str, events: Events, keep: Callable[[dict[str, Any]], bool] = bool) -> list[dict[str, Any]]:
    return [data for event, data in events if event == kind and keep(data)]


def test_a_second_line_of_one_second_is_published_after_the_first_by_position(store: Store) -> None:
    events = published(store, [[decode(T0, 0, 900.0)], [decode(T0, 0, 950.0)],
                               [decode(T0, 0, 990.0), decode(T0 + 1, 0, 800.0), decode(T0 + 1, 0, 810.0)]])
    samples = of("sample", events)
    assert [s["points"]["gen_throughput"] for s in samples] == [
        [[T0, 900.0]], [[T0, 950.0]], [[T0, 990.0], [T0 + 1, 800.0], [T0 + 1, 810.0]]]
    # how many points of its first point's stamp came before each event
    assert [s["stamp_index"]["gen_throughput"] for s in samples] == [0, 1, 2]
    t, v = store.series("gpu1", "gen_throughput")
    assert list(zip(t.tolist(), v.tolist(), strict=True)) == [
        (T0, 900.0), (T0, 950.0), (T0, 990.0), (T0 + 1, 800.0), (T0 + 1, 810.0)]


def test_a_runs_first_decode_sample_is_run_news_once(store: Store) -> None:
    ready = READY.format(ts=stamp(T0 + 10)).rstrip("\n")
    events = published(store, [[decode(T0, 0, 900.0)], [ready], [decode(T0 + 11, 0, 1.0)],
                               [decode(T0 + 12, 0, 2.0)], [ready.replace(stamp(T0 + 10), stamp(T0 + 20)),
                                                           decode(T0 + 21, 0, 3.0)]])
    news = of("run", events, lambda data: data.get("kind") == "decoding")
    # none for samples before any start; one after each start, at its first decode sample
    assert news == [{"host": "gpu1", "kind": "decoding", "t": T0 + 11},
                    {"host": "gpu1", "kind": "decoding", "t": T0 + 21}]
