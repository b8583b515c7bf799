"""A refill (history fetched again: back to live after a zoom, a range button, a chart at its bound)
and live points in Chromium: a refill's answer that lands late, as on a loaded machine, never replaces
the live points that arrived while it was in flight, and an older refill never draws over a newer one.

The late answers are real /api/series answers fetched when the page asked (`route.fetch`) and handed
to the page only later (`route.fulfill`): the snapshot a slow answer carries, delivered late.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from tests.app.slice_helpers import append_lines, start_services, wait_until
from tests.fixtures.web import wait_settled

pytestmark = pytest.mark.browser
SERIES = re.compile(r"/api/series\?")
THROUGHPUT_Y = "document.getElementById('chart-throughput').data[0].y"
TRACES = "['chart-throughput','chart-usage','chart-requests','chart-completions','chart-gpu-util','chart-gpu-mem']" \
         ".reduce((n, id) => n + document.getElementById(id).data.length, 0)"


class HeldSeries:
    """/api/series answers taken from the server at once and delivered when `release` is called."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.held: list[tuple[Any, Any]] = []
        self.passing = False
        page.route(SERIES, self._hold)

    def _hold(self, route: Any) -> None:
        if self.passing:
            route.continue_()
        else:
            self.held.append((route, route.fetch()))

    def wait_for(self, count: int) -> None:
        """Until `count` answers are held (the handler runs while Playwright is called: wait in it)."""
        for _ in range(200):
            if len(self.held) >= count:
                return
            self.page.wait_for_timeout(50)
        raise AssertionError(f"{len(self.held)} of {count} requests held")

    def release(self) -> None:
        self.passing = True
        for route, response in self.held:
            route.fulfill(response=response)


def stored(services: Any, line: int) -> bool:
    return 900 + line in services.store.series("local", "gen_throughput")[1][-20:]


def zoom_throughput(page: Any) -> None:
    box = page.locator("#chart-throughput .nsewdrag").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=6)
    page.mouse.up()
    page.wait_for_function("document.getElementById('live-badge').textContent === 'paused (zoomed)'")
    wait_settled(page, timeout=10_000)  # the zoom's window is drawn


def test_live_points_that_arrive_during_a_late_refill_are_kept(
        tmp_path: Path, serve_app: Any, page: Any) -> None:
    append_lines(tmp_path / "server.log", 1, 40)
    services = start_services(tmp_path)
    server = serve_app(create_app(services))
    wait_until(lambda: stored(services, 40))
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(server.url)
    wait_settled(page, timeout=20_000)
    # live: the stream's hello was heard and the first open's backfill is done
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=10_000)
    zoom_throughput(page)
    zoomed = page.evaluate(f"{THROUGHPUT_Y}.length")
    assert 0 < zoomed < 40

    held = HeldSeries(page)
    page.locator("#back-to-live").click()  # the refill of the live view: its answers hold lines 1-40
    page.wait_for_function("document.getElementById('live-badge').textContent === 'following live'")
    traces = page.evaluate(TRACES)
    held.wait_for(traces)
    append_lines(tmp_path / "server.log", 41, 10)  # these reach the page while the refill is in flight
    wait_until(lambda: stored(services, 50))
    page.wait_for_function("document.querySelector('[data-testid=now-gen] .now-value').textContent === '950'",
                           timeout=10_000)
    held.release()

    page.wait_for_function(f"{THROUGHPUT_Y}.includes(950)", timeout=10_000)
    drawn = page.evaluate(THROUGHPUT_Y)
    assert drawn == [900.0 + n for n in range(1, 51)]  # the history, then the live points, each once
    requests = page.evaluate("document.getElementById('chart-requests').data[0].y")
    assert requests == [float(n) for n in range(1, 51)]


def test_an_older_refill_that_lands_last_is_not_drawn(tmp_path: Path, serve_app: Any, page: Any) -> None:
    append_lines(tmp_path / "server.log", 1, 40)
    services = start_services(tmp_path)
    server = serve_app(create_app(services))
    wait_until(lambda: stored(services, 40))
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(server.url)
    wait_settled(page, timeout=20_000)
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=10_000)
    traces = page.evaluate(TRACES)

    held = HeldSeries(page)
    box = page.locator("#chart-throughput .nsewdrag").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=6)
    page.mouse.up()  # the zoom's window refill: held
    page.wait_for_function("document.getElementById('live-badge').textContent === 'paused (zoomed)'")
    held.wait_for(traces)
    page.locator("#back-to-live").click()  # the live refill, newer: held too
    held.wait_for(2 * traces)
    # The newer answers first, then the zoom's: the zoom's window must not end up on the charts.
    held.held = held.held[traces:] + held.held[:traces]
    held.release()
    wait_settled(page, timeout=10_000)  # both refills landed
    page.wait_for_function(f"{THROUGHPUT_Y}.length === 40", timeout=10_000)
    assert page.evaluate(THROUGHPUT_Y) == [900.0 + n for n in range(1, 41)]
    assert page.locator("#live-badge").inner_text() == "following live"
