"""The page watches a campaign: the plan with each candidate's prediction and why two are skipped, the
step under way with its phase, then the final table with the chosen step and the price sentences, all
without a reload (the panel asks again every 5 s)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.commands.common import DEMO_HOST
from kvwatch.app.commands.demo import demo_config, wire
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.simulator.demo import start_demo_world
from tests.campaign.helpers import DONE_WITHIN_S
from tests.fixtures.web import block_outside_requests, live_wait, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(DONE_WITHIN_S + 300)]
TOKEN = "campaign-page-t0ken"
SPEED = 8.0


@pytest.fixture
def demo(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("KVWATCH_TOKEN", TOKEN)
    world = start_demo_world(tmp_path / "world", speed=SPEED)
    services = build_services(demo_config(world, tmp_path))
    try:
        url = serve_app(create_app(services)).url
        wire({DEMO_HOST: world}, services)
        yield url
    finally:
        if services.campaigns is not None:
            services.campaigns.stop()
        controller = services.controllers.get("demo")
        if controller is not None:
            controller.wait(60)
            controller.remote.stop(5)
        world.stop()


def sized_run(url: str) -> None:
    """Wait until the host's current run shows its KV pool and capacity, as the page's runs list does."""
    deadline = time.monotonic() + 60
    runs: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        runs = httpx.get(f"{url}/api/runs", params={"host": DEMO_HOST}, timeout=60).json()
        capacity = (runs[-1].get("capacity") or {}) if runs else {}
        if capacity.get("max_total_num_tokens") and capacity.get("kv_cache"):
            return
        time.sleep(0.5)
    raise AssertionError(f"the current run showed no KV pool and capacity within 60 s: {runs}")


def post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(url + path, json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_the_panel_shows_the_plan_the_live_step_and_the_final_table(demo: str, page: Any) -> None:
    outside = block_outside_requests(page)
    page.goto(demo, timeout=90_000)
    wait_settled(page, timeout=30_000)
    assert page.is_hidden("[data-testid=campaign-panel]")  # no campaign yet: the panel hides
    time.sleep(8)  # the story's first run has been up a few seconds, as when a person plans
    sized_run(demo)  # and the page lists it with its KV pool (on a loaded machine, some seconds later)
    plan = post(demo, "/api/campaign/demo/plan", {})
    predicted = f"{plan['steps'][0]['prediction']['max_total_num_tokens']:,}"
    page.wait_for_selector("[data-testid=campaign-step-3]", timeout=30_000)
    assert page.get_attribute("[data-testid=campaign-state]", "data-state") == "planned"
    assert predicted in page.text_content("[data-testid=campaign-step-1]")
    assert page.get_attribute("[data-testid=campaign-step-2]", "data-status") == "skipped"
    assert "the owner ruled out fp8 KV cache" in page.text_content("[data-testid=campaign-step-2]")
    assert "after CUDA-graph capture" in page.text_content("[data-testid=campaign-step-3]")

    # Back to the default config, so the first step has to restart: a step whose config the host
    # already ran long enough is measured at once, before the panel's next 5-s look (the story reaches
    # 0.88 at 15 s wall, and a page load under load can take longer than that).
    back = httpx.post(f"{demo}/api/hosts/demo/restart", json={"preset": "default"},
                      headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert back.status_code == 202, back.text
    deadline = time.monotonic() + 120
    while (state := httpx.get(f"{demo}/api/hosts/demo/restart", timeout=60).json())["busy"] or \
            not (state["operation"] or {}).get("outcome"):
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    assert state["operation"]["outcome"] == "ok", state
    post(demo, "/api/campaign/demo/start", {"campaign": plan["id"]})
    page.wait_for_selector("[data-testid=campaign-live][data-phase=steady]", timeout=120_000)
    assert "hicache-0.88" in page.text_content("[data-testid=campaign-live]")
    deadline = time.monotonic() + DONE_WITHIN_S
    while httpx.get(f"{demo}/api/campaign/demo", timeout=60).json()["state"] == "running":
        assert time.monotonic() < deadline
        live_wait(page, 2.0)
    page.wait_for_selector("[data-testid=campaign-state][data-state=done]", timeout=30_000)
    assert page.is_hidden("[data-testid=campaign-live]") or page.query_selector("[data-testid=campaign-live]") is None
    assert "measured (chosen)" in page.text_content("[data-testid=campaign-step-1]")
    prices = page.text_content("[data-testid=campaign-prices]")
    assert "fp8_e4m3 KV instead of bf16" in prices and "vetoed" in prices
    assert not outside
