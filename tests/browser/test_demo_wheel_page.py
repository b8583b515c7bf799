"""The page says when a person's restart stopped the demo's story: the restart panel shows the notice
that GET /api/hosts/demo/controller carries, without a reload."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.commands.common import DEMO_HOST
from kvwatch.app.commands.demo import demo_config, story_notice, wire
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.simulator.demo import start_demo_world
from tests.fixtures.web import block_outside_requests, live_wait, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
TOKEN = "wheel-page-t0ken"
SPEED = 8.0


@pytest.fixture
def demo(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("KVWATCH_TOKEN", TOKEN)
    world = start_demo_world(tmp_path / "world", speed=SPEED)
    services = build_services(demo_config(world, tmp_path))
    try:
        url = serve_app(create_app(services)).url
        wire({DEMO_HOST: world}, services)  # as `kvwatch demo` does once it serves
        yield url
    finally:
        controller = services.controllers.get("demo")
        if controller is not None:
            controller.wait(60)
            controller.remote.stop(5)
        world.stop()


def test_the_panel_says_the_story_stopped_when_a_person_restarts(demo: str, page: Any) -> None:
    outside = block_outside_requests(page)
    page.goto(demo, timeout=90_000)
    wait_settled(page, timeout=30_000)
    page.wait_for_selector("[data-testid=preset-default]", timeout=30_000)
    assert page.text_content("#ctl-notice") == ""  # the story plays: nothing to say yet
    answer = httpx.post(f"{demo}/api/hosts/demo/restart", json={"flags": {"mem-fraction-static": 0.87}},
                        headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert answer.status_code == 202, answer.text
    deadline = time.monotonic() + 120
    while httpx.get(f"{demo}/api/hosts/demo/restart", timeout=60).json()["busy"]:
        assert time.monotonic() < deadline
        live_wait(page, 0.5)  # the page's requests are routed by this process
    notice = httpx.get(f"{demo}/api/hosts/demo/controller", timeout=60).json()["notice"]
    assert notice["message"] == story_notice(notice["at"])
    # the panel looks again every 10 s while idle
    page.wait_for_function("document.getElementById('ctl-notice').textContent.length > 0", timeout=60_000)
    assert page.text_content("#ctl-notice") == notice["message"]
    assert notice["message"].startswith("the demo's story stopped: you restarted the server at ")
    assert not outside
