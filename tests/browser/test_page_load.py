"""How the page loads: its history is fetched while plotly.js is still loading, and drawn once it is there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from urllib.request import urlopen

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.world import ScriptedRun
from tests.fixtures.web import block_outside_requests, wait_settled

pytestmark = pytest.mark.browser
TRACES = 10  # the six charts' traces (the catalog's CHARTS, hottest GPU included), one /api/series request each
STREAM_LIVE = "document.getElementById('stream-state').textContent === 'live'"
SERIES_DONE = (
    f"performance.getEntriesByType('resource').filter((r) => r.name.includes('/api/series?')).length >= {TRACES}"
)


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
    drawn = page.evaluate(
        "['chart-throughput', 'chart-usage', 'chart-requests']"
        ".map((id) => document.getElementById(id).data[0].x.length)"
    )
    assert min(drawn) >= 250  # the scripted run's five minutes of history, drawn from the early fetch
    page.wait_for_function(STREAM_LIVE, timeout=15_000)  # the stream's first hello, and its backfill, landed
    fetched = page.evaluate(
        "performance.getEntriesByType('resource').map((r) => r.name).filter((name) => name.includes('/api/series?'))"
    )
    history, backfill = fetched[:TRACES], fetched[TRACES:]
    assert len(backfill) == TRACES  # one request a trace for what was stored before the stream opened
    newest = {trace_key(url): newest_point(url) for url in history}  # nothing is appended: same answer
    # Nothing fetched twice: a backfill asks only for what follows the history, from 1 ms before its
    # newest stamp (`since` excludes it, and more samples of that second may have been stored since).
    for url in backfill:
        last = newest[trace_key(url)]
        assert since(url) == (None if last is None else pytest.approx(last - 0.001, abs=1e-6)), url
    assert outside == []


def trace_key(url: str) -> tuple[str, str]:
    query = parse_qs(urlsplit(url).query)
    return query["metric"][0], query.get("rank", [""])[0]


def newest_point(url: str) -> float | None:
    with urlopen(url) as response:
        points = json.load(response)["points"]
    return points[-1][0] if points else None


def since(url: str) -> float | None:
    value = parse_qs(urlsplit(url).query).get("since")
    return float(value[0]) if value else None


def test_page_says_nothing_is_drawn_without_plotly(served: str, page: Any) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.route("**/vendor/plotly.min.js", lambda route: route.fulfill(status=404, body="gone"))
    page.goto(served)
    page.wait_for_function(SERIES_DONE, timeout=15_000)
    page.wait_for_function("document.getElementById('host-error').textContent !== ''", timeout=5_000)
    assert "plotly.js did not load" in page.locator("#host-error").inner_text()
