"""The full page in Debian's Chromium against a real uvicorn and the real pipeline, fed by a scripted run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.world import ScriptedRun
from tests.fixtures.web import open_dashboard, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHARTS = ("chart-throughput", "chart-usage", "chart-requests", "chart-completions", "chart-gpu-util", "chart-gpu-mem")


@pytest.fixture
def live_run(tmp_path: Path, serve_app: Any) -> Iterator[tuple[ScriptedRun, str]]:
    run = ScriptedRun(tmp_path)
    services = build_services(run.config())
    for collector in services.collectors.values():
        collector.interval = 0.1
    server = serve_app(create_app(services))
    run.start()
    yield run, server.url
    run.stop()


def open_page(page: Any, url: str) -> list[str]:
    outside = open_dashboard(page, url)
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=10_000)
    return outside


def trace_length(page: Any, chart: str, trace: int = 0) -> int:
    return int(page.evaluate(f"document.getElementById('{chart}').data[{trace}].x.length"))


def test_charts_fill_and_extend_live_offline(live_run: tuple[ScriptedRun, str], page: Any) -> None:
    _, url = live_run
    outside = open_page(page, url)
    assert page.evaluate("document.querySelectorAll('main .chart .main-svg').length") >= len(CHARTS)
    before = trace_length(page, "chart-throughput")
    assert before >= 250  # the run's five minutes of history
    assert trace_length(page, "chart-requests", 1) >= 250  # queued requests
    page.wait_for_function(f"document.getElementById('chart-throughput').data[0].x.length >= {before + 8}",
                           timeout=15_000)
    page.wait_for_function("document.getElementById('chart-completions').data[1].x.length > 0", timeout=15_000)
    assert page.evaluate("document.getElementById('chart-usage').layout.shapes[0].y0") == 0.95
    # Trace names say how the host series combines the two DP ranks (the metric catalog's label).
    name = "document.getElementById('{}').data[0].name"
    assert page.evaluate(name.format("chart-throughput")) == "gen tok/s (sum over 2 DP ranks)"
    assert page.evaluate(name.format("chart-usage")) == "token usage (max of 2 DP ranks)"
    # The three sources, each with its freshness, and the progress line with an ETA.
    page.wait_for_function("document.querySelectorAll('#sources .fresh').length >= 3", timeout=10_000)
    freshness = page.locator("#sources .fresh").all_inner_texts()
    assert all("s ago" in text for text in freshness), freshness
    page.wait_for_function("document.getElementById('progress').textContent.includes('ETA')", timeout=15_000)
    assert page.locator("#host-state").inner_text() == "up"
    assert outside == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)


def test_restart_marker_appears_live(live_run: tuple[ScriptedRun, str], page: Any) -> None:
    run, url = live_run
    outside = open_page(page, url)
    assert page.evaluate("document.getElementById('chart-throughput').markerCount") == 1  # the first start
    restarted_at = run.restart()
    page.wait_for_function("document.getElementById('chart-throughput').markerCount === 2", timeout=15_000)
    shapes = page.evaluate(
        "document.getElementById('chart-requests').layout.shapes.map(s => [s.name, new Date(s.x0).getTime() / 1000])")
    # A run (from /api/runs) or, where runs are not tracked, a server start (from /api/events).
    restarts = [x for name, x in shapes if name in ("marker-run", "marker-restart")]
    assert len(restarts) == 2
    assert abs(max(restarts) - restarted_at) <= 1
    # markerCount is set when the markers are handed to plotly; their labels are drawn a frame later
    page.wait_for_function(
        "[...document.querySelectorAll('#chart-throughput .annotation-text')]"
        ".filter(a => /^(run |server start)/.test(a.textContent)).length >= 2", timeout=5_000)
    labels = page.locator("#chart-throughput .annotation-text").all_text_contents()
    assert len([label for label in labels if label.startswith(("run ", "server start"))]) == 2, labels
    assert outside == []
    page.screenshot(path=str(ARTIFACTS / "dashboard-restart.png"), full_page=True)


def test_zoom_fetches_history_and_aligns_every_chart(live_run: tuple[ScriptedRun, str], page: Any) -> None:
    _, url = live_run
    outside = open_page(page, url)
    box = page.locator("#chart-usage .nsewdrag").bounding_box()
    y = box["y"] + box["height"] / 2
    with page.expect_request(lambda r: "/api/series" in r.url and "until=" in r.url, timeout=10_000) as first:
        page.mouse.move(box["x"] + box["width"] * 0.3, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.45, y, steps=8)
        page.mouse.up()
    assert "since=" in first.value.url
    wait_settled(page, timeout=10_000)  # the zoom's window is drawn
    ranges = page.evaluate(
        f"{json.dumps(CHARTS)}.map(id => document.getElementById(id).layout.xaxis.range"
        ".map(x => new Date(x).getTime()))")
    assert all(abs(r[0] - ranges[0][0]) < 5 and abs(r[1] - ranges[0][1]) < 5 for r in ranges), ranges
    xs = page.evaluate("document.getElementById('chart-throughput').data[0].x.map(x => new Date(x).getTime())")
    assert xs
    assert ranges[0][0] - 1000 <= min(xs) and max(xs) <= ranges[0][1] + 1000
    assert page.locator("#live-badge").inner_text() == "paused (zoomed)"
    page.locator("#back-to-live").click()
    page.wait_for_function("document.getElementById('live-badge').textContent === 'following live'",
                           timeout=10_000)
    assert outside == []


def test_alert_banner_shows_the_firing_token_usage_alert(live_run: tuple[ScriptedRun, str], page: Any) -> None:
    _, url = live_run
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    outside = open_page(page, url)
    page.wait_for_function("!document.getElementById('alert-banner').hidden", timeout=30_000)
    entry = page.locator("[data-testid=alert-entry][data-rule=token_usage_high]")
    assert entry.locator(".alert-host").inner_text() == "gpu1"
    assert entry.locator("[data-testid=alert-headline]").inner_text().startswith("KV token usage high 0.9")
    assert errors == []
    assert outside == []
    page.screenshot(path=str(ARTIFACTS / "dashboard-alert.png"), full_page=True)


def test_dark_theme_toggle(live_run: tuple[ScriptedRun, str], page: Any) -> None:
    _, url = live_run
    open_page(page, url)
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.locator("#theme").click()  # auto -> light
    page.locator("#theme").click()  # light -> dark
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != light
