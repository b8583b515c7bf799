"""The demo over two minutes, as a person watching it: the row of current values keeps up with the
host's status answer, a 15-minute window follows now, and after two minutes the page still fits a
phone (390 px). Screenshots at ~10 s and ~2 min go to test-artifacts/ (not committed) for a person
to look at."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.commands.demo import demo_config
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.simulator.demo import start_demo_world
from tests.fixtures.web import block_outside_requests, live_wait, wait_panels, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(480)]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# What sticks out past the viewport (outside plotly's SVG), to name it when the width check fails.
WIDER = """() => [...document.querySelectorAll('body *')].filter((e) => !e.closest('svg')
  && e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
  .map((e) => `${e.tagName}#${e.id}.${e.className}`).slice(0, 10)"""
X_RANGE = "(id) => document.getElementById(id).layout.xaxis.range.map((x) => new Date(x).getTime() / 1000)"


@pytest.fixture
def demo_url(tmp_path: Path, serve_app: Any) -> Iterator[str]:
    world = start_demo_world(tmp_path)
    services = build_services(demo_config(world, tmp_path))
    try:
        yield serve_app(create_app(services)).url
    finally:
        world.stop()


def running_now(page: Any) -> float:
    text = page.locator("[data-testid=now-running] .now-value").inner_text()
    return float(text.replace(",", "")) if text != "—" else -1.0


def test_demo_now_row_follows_the_stream_and_a_window_moves_with_now(demo_url: str, page: Any) -> None:
    outside = block_outside_requests(page)
    page.set_viewport_size({"width": 1400, "height": 1000})
    started = time.monotonic()
    page.goto(f"{demo_url}/?range=15m", timeout=90_000)  # a shared machine under load can be slow to serve the page
    wait_settled(page, timeout=30_000)
    host = page.locator("[data-testid=host-picker]").input_value()
    assert f"host={host}" in page.url and "range=15m" in page.url
    page.wait_for_function("document.querySelector('[data-testid=now-gen] .now-value').textContent !== '—'",
                           timeout=60_000)
    live_wait(page, 10 - (time.monotonic() - started))
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "demo-now-10s.png"), full_page=True)
    first_range = page.evaluate(X_RANGE, "chart-usage")
    assert first_range[1] - first_range[0] == pytest.approx(900, abs=1)
    live_wait(page, 120 - (time.monotonic() - started))
    # Two minutes on: the window moved with now, and the row shows what the server says now. The
    # running count changes with every sample; it is compared with status answers on either side of the read.
    later = page.evaluate(X_RANGE, "chart-usage")
    assert later[1] - first_range[1] > 60 and later[1] == pytest.approx(time.time(), abs=30)
    for _ in range(20):
        before = httpx.get(f"{demo_url}/api/hosts/{host}/status", timeout=60).json()["running_req"]
        shown = running_now(page)
        after = httpx.get(f"{demo_url}/api/hosts/{host}/status", timeout=60).json()["running_req"]
        if shown in (before, after):
            break
        time.sleep(0.2)
    assert shown in (before, after), (shown, before, after)
    page.wait_for_function("document.querySelector('[data-testid=now-alerts] .now-value').textContent"
                           ".includes('firing: token_usage_high')", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "demo-now-2min.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    wait_panels(page)  # the controller panel and the compare view are drawn
    # The story's second run starts at 2 min of the demo's clock: its compare list (the runs' flag
    # lists, the widest thing here) follows the `run` event once the restart is seen in the log.
    page.wait_for_function("document.querySelectorAll('#cmp-baseline option').length >= 2", timeout=120_000)
    live_wait(page, 1.5)  # the charts' responsive resize
    page.screenshot(path=str(ARTIFACTS / "demo-now-390.png"), full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, (width, page.evaluate(WIDER))
    assert outside == []
