"""One tab left open on the demo through a person's restarts shows, after each, what a freshly loaded
tab shows: runs, markers, compare table, alerts and every chart point (issue #30). The demo is paused
(its server and client stopped with SIGSTOP) while the two tabs are compared, so that both see one
store; it resumes before the next restart."""

from __future__ import annotations

import contextlib
import os
import signal
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
from kvwatch.simulator.demo import DemoWorld, start_demo_world
from tests.browser.test_live_tab import CONVERGE_S, SNAPSHOT, differences
from tests.fixtures.web import block_outside_requests, live_wait, wait_panels, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]
TOKEN = "open-tab-t0ken"
SPEED = 8.0
RESTARTS = ({"mem-fraction-static": 0.87}, {"mem-fraction-static": 0.85}, {"mem-fraction-static": 0.88})


@pytest.fixture
def demo(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, DemoWorld]]:
    monkeypatch.setenv("KVWATCH_TOKEN", TOKEN)
    world = start_demo_world(tmp_path / "world", speed=SPEED)
    services = build_services(demo_config(world, tmp_path))
    try:
        url = serve_app(create_app(services)).url
        wire({DEMO_HOST: world}, services)
        yield url, world
    finally:
        controller = services.controllers.get(DEMO_HOST)
        if controller is not None:
            controller.wait(60)
            controller.remote.stop(5)
        world.stop()


def signal_world(world: DemoWorld, signum: int) -> None:
    """Every simulated server (each leads its group) and the client (in this process's group: by pid)."""
    for pid in world.server_pids():
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signum)
            else:
                os.kill(pid, signum)


def quiet(url: str, page: Any) -> None:
    before = None
    for _ in range(60):
        points = httpx.get(f"{url}/api/series", params={"host": DEMO_HOST, "metric": "gen_throughput"},
                           timeout=60).json()["points"]
        if points == before:
            return
        before = points
        live_wait(page, 1.0)
    raise AssertionError("the stored series kept growing with the demo paused")


def test_a_tab_open_through_the_demos_restarts_shows_what_a_fresh_load_shows(
    demo: tuple[str, DemoWorld], page: Any, context: Any
) -> None:
    url, world = demo
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    outside = block_outside_requests(page)
    page.goto(url, timeout=90_000)
    wait_settled(page, timeout=30_000)
    for number, flags in enumerate(RESTARTS, start=1):
        runs_before = len(httpx.get(f"{url}/api/runs", params={"host": DEMO_HOST}, timeout=60).json())
        answer = httpx.post(f"{url}/api/hosts/{DEMO_HOST}/restart", json={"flags": flags},
                            headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        assert answer.status_code == 202, answer.text
        deadline = time.monotonic() + 180
        while (httpx.get(f"{url}/api/hosts/{DEMO_HOST}/restart", timeout=60).json()["busy"]
               or len(httpx.get(f"{url}/api/runs", params={"host": DEMO_HOST}, timeout=60).json()) <= runs_before):
            assert time.monotonic() < deadline, f"restart {number} did not end"
            live_wait(page, 0.5)
        live_wait(page, 8.0)  # the new run decodes a while, the open tab following live
        signal_world(world, signal.SIGSTOP)
        try:
            quiet(url, page)
            fresh = context.new_page()
            block_outside_requests(fresh)
            fresh.goto(url, timeout=90_000)
            wait_settled(fresh, timeout=30_000)
            wait_panels(fresh, timeout=30_000)  # its compare view too: a snapshot before it was drawn had no table
            wanted = fresh.evaluate(SNAPSHOT)
            fresh.close()
            assert len(wanted["runs"]) >= number + 1, wanted["runs"]
            deadline = time.monotonic() + CONVERGE_S
            while (left := differences(page.evaluate(SNAPSHOT), wanted)) and time.monotonic() < deadline:
                live_wait(page, 0.5)
            assert left == [], f"after restart {number}: " + "\n".join(x[:600] for x in left)
        finally:
            signal_world(world, signal.SIGCONT)
    assert errors == [] and outside == []
