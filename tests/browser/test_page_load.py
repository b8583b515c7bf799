"""How the page loads: its history is fetched while plotly.js is still loading, and drawn once it is there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.world import ScriptedRun
from tests.fixtures.web import block_outside_requests, wait_settled

pytestmark = pytest.mark.browser
TRACES = 10  # the six charts' traces (the catalog's CHARTS, hottest GPU included), one /api/series request each
SERIES_DONE = ("performance.getEntriesByType('resource')"
               f".filter((r) => r.name.includes('/api/series?')).length >= {TRACES}")


@pytest.fixture
def served(tmp_path: Path, serve_app: Any) -> str:
    run = ScriptedRun(tmp_path)  # its five minutes of history; not started, nothing is appended
    return str(serve_app(create_app(build_services(run.config()))).url)


def test_history_is_fetched_before_plotly_arrives(served: str, page: Any) -> None:
    outside = block_outside_requests(page)
    held: list[Any] = []
    page.route("**/vendor/plotly.min.js", lambda route: held.append(route))  # answered once every series is in
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(served, wait_until="domcontentloaded")  # "load" would wait for the held script
    page.wait_for_function(SERIES_DONE, timeout=15_000)
    page.wait_for_function("document.querySelectorAll('#host-strip *').length > 0", timeout=5_000)
    assert page.evaluate("typeof window.Plotly") == "undefined"
    assert page.evaluate("performance.getEntriesByName('kvwatch-start').length") == 0
    assert len(held) == 1
    held[0].continue_()
    wait_settled(page, timeout=30_000)
    drawn = page.evaluate("['chart-throughput', 'chart-usage', 'chart-requests']"
                          ".map((id) => document.getElementById(id).data[0].x.length)")
    assert min(drawn) >= 250  # the scripted run's five minutes of history, drawn from the early fetch
    fetched = page.evaluate("performance.getEntriesByType('resource')"
                            ".filter((r) => r.name.includes('/api/series?')).length")
    assert fetched == TRACES  # nothing fetched twice
    assert outside == []


def test_page_says_nothing_is_drawn_without_plotly(served: str, page: Any) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.route("**/vendor/plotly.min.js", lambda route: route.fulfill(status=404, body="gone"))
    page.goto(served)
    page.wait_for_function(SERIES_DONE, timeout=15_000)
    page.wait_for_function("document.getElementById('host-error').textContent !== ''", timeout=5_000)
    assert "plotly.js did not load" in page.locator("#host-error").inner_text()
