"""The page in Debian's Chromium: the chart fills from history, extends live, and stays on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvwatch.app.main import create_app
from tests.app.slice_helpers import append_lines, start_services, wait_until
from tests.fixtures.web import block_outside_requests, wait_settled

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def trace_length(page: Any, chart: str) -> int:
    return int(page.evaluate(f"document.getElementById('{chart}').data[0].x.length"))


def test_chart_fills_and_moves_offline(tmp_path: Path, serve_app: Any, page: Any) -> None:
    append_lines(tmp_path / "server.log", 1, 120)
    services = start_services(tmp_path)
    server = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) == 120)
    outside = block_outside_requests(page)

    page.goto(server.url)
    wait_settled(page, timeout=20_000)
    assert trace_length(page, "chart-throughput") == 120
    assert trace_length(page, "chart-usage") == 120
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=10_000)

    append_lines(tmp_path / "server.log", 121, 15)
    page.wait_for_function("document.getElementById('chart-throughput').data[0].x.length >= 135", timeout=10_000)
    assert page.evaluate("document.getElementById('chart-throughput').data[0].y.at(-1)") == 900 + 135
    assert page.locator("#chart-throughput path.js-line").count() >= 1
    assert outside == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "live-chart.png"), full_page=True)
