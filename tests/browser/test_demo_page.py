"""The page on the demo: the simulated SGLang server and client through the real pipeline, as `kvwatch demo`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.commands.demo import demo_config
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.simulator.demo import start_demo_world
from tests.fixtures.web import block_outside_requests, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture
def demo_url(tmp_path: Path, serve_app: Any) -> Iterator[str]:
    world = start_demo_world(tmp_path)
    services = build_services(demo_config(world, tmp_path))
    try:
        yield serve_app(create_app(services)).url
    finally:
        world.stop()


def test_demo_saturates_on_the_page_and_the_alert_banner_shows(demo_url: str, page: Any) -> None:
    outside = block_outside_requests(page)
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(demo_url)
    wait_settled(page, timeout=30_000)
    # docs/cli.md: within 60 s of start the demo shows usage above 0.95, a queue, and a firing alert.
    page.wait_for_function("!document.getElementById('alert-banner').hidden"
                           " && document.getElementById('alert-banner').textContent.includes('token_usage_high')",
                           timeout=75_000)
    page.wait_for_function("Math.max(...document.getElementById('chart-usage').data[0].y) > 0.95", timeout=10_000)
    page.wait_for_function("Math.max(...document.getElementById('chart-requests').data[1].y) > 0", timeout=10_000)
    assert page.evaluate("document.getElementById('chart-throughput').markerCount") >= 1  # the server start
    assert outside == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-demo.png"), full_page=True)
