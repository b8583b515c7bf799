"""The replay log is for pages that were listening: with nobody subscribed for `replay_idle_s` it is
emptied and keeps nothing more until a page subscribes again, and a process without the web app
(`kvwatch collect`) keeps none. A resume the log cannot serve says so, and the page backfills."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app import runner
from kvwatch.app.build import build_services
from kvwatch.app.bus import EventBus
from kvwatch.app.services import Services
from tests.app.slice_helpers import append_lines, local_config, wait_until
from tests.app.test_stream_resume import run_apart

IDLE_S = 0.3


def test_a_log_nobody_listens_to_is_dropped_after_the_idle_time() -> None:
    async def scenario() -> None:
        bus = EventBus(replay_idle_s=IDLE_S)
        early = [bus.publish("sample", {"n": n}) for n in range(3)]
        page, replay = bus.subscribe(early[0].id)
        assert replay.complete and len(replay.events) == 2  # within the idle time: still kept
        bus.unsubscribe(page)
        time.sleep(IDLE_S * 1.5)
        late = bus.publish("sample", {"n": 3})
        assert bus._log_bytes == 0 and len(bus._log) == 0
        replay = bus.subscribe(early[0].id)[1]
        assert not replay.complete and replay.events == []  # the page backfills from /api/series
        assert bus.subscribe(late.id)[1].complete  # nothing after the newest: nothing missed

    run_apart(scenario)


def test_while_a_page_listens_the_log_keeps_and_a_reconnect_is_replayed() -> None:
    async def scenario() -> None:
        bus = EventBus(replay_idle_s=IDLE_S)
        time.sleep(IDLE_S * 1.5)  # idle since start: keeps nothing
        bus.publish("sample", {"n": 0})
        assert len(bus._log) == 0
        page, hello = bus.subscribe()
        time.sleep(IDLE_S * 1.5)  # subscribed: kept however long it lasts
        sent = [bus.publish("sample", {"n": n}) for n in range(1, 4)]
        bus.unsubscribe(page)  # the tab's link drops
        missed = [bus.publish("sample", {"n": n}) for n in range(4, 6)]
        replay = bus.subscribe(sent[0].id)[1]  # it reconnects at once
        assert replay.complete and [e.id for e in replay.events] == [e.id for e in sent[1:] + missed]
        assert hello.position == f"{bus.epoch}-1"

    run_apart(scenario)


def test_collect_without_the_web_app_keeps_no_replay_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through `runner.collect`, as `kvwatch collect` runs it: the collector publishes its samples and
    the bus keeps none of them. `kvwatch serve`'s bus (build_services' default) does keep them."""
    built: list[Services] = []

    def build_and_remember(*args: Any, **kwargs: Any) -> Services:
        built.append(build_services(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(runner, "build_services", build_and_remember)
    config = local_config(tmp_path)
    append_lines(tmp_path / "server.log", 1, 50)
    stop = threading.Event()
    thread = threading.Thread(target=runner.collect, args=(config, stop))
    thread.start()
    try:
        wait_until(lambda: bool(built) and len(built[0].store.series("local", "running_req")[0]) == 50)
        assert built[0].bus._seq > 0, "the collector published its samples"
        assert len(built[0].bus._log) == 0 and built[0].bus._log_bytes == 0
    finally:
        stop.set()
        thread.join(15)
    served = build_services(config)
    try:
        served.bus.publish("sample", {"n": 0})
        served.bus.publish("sample", {"n": 1})
        assert len(served.bus._log) == 2  # a page that connects next may resume from either
    finally:
        served.store.close()


def test_an_event_nobody_can_receive_is_not_encoded_and_listeners_still_hear_it() -> None:
    async def scenario() -> None:
        bus = EventBus(replay_idle_s=IDLE_S)
        heard: list[Any] = []
        bus.add_listener(lambda event, data: heard.append(data))
        time.sleep(IDLE_S * 1.5)
        unheard = bus.publish("sample", {"n": 0})
        assert unheard.raw == "" and heard == [{"n": 0}]
        page, _ = bus.subscribe()
        sent = bus.publish("sample", {"n": 1, "v": float("nan")})
        assert sent.raw == '{"n":1,"v":null}' and heard[-1]["n"] == 1
        bus.unsubscribe(page)

    run_apart(scenario)
