"""Benchmark: the fleet page in headless Debian Chromium, N hosts side by side in one run.

Each host has 5 minutes of stored samples (bench/fleet_api.py's store, no collector). Load: a fresh
browser context, from navigation to N fleet rows drawn (plotly.js and the first host's charts load
beside it), the median of `--repeat`; "cold" is the first of them (no verdict or sparkline kept yet,
as when a person opens the page on a kvwatch that ran without one), the others follow within seconds.
Live: then one `sample` event per host per second published on the app's bus for `--live` seconds
(the stream's most, whatever the number of hosts), and the renderer's main-thread work per second of
it from Chromium's own counters (CDP Performance.getMetrics TaskDuration: every task, layout and
script included): first for every host but the one whose charts are open (the fleet view's own
work), then for all (its charts redraw too), after as long with nothing published ("idle": the
page's own clocks). One frame at 60 Hz is 16.7 ms.

usage: PYTHONPATH=. python bench/fleet_page.py [SIZES...] [--repeat 3] [--live 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from bench.fleet_api import METRICS, services_with
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from tests.fixtures.web import CHROMIUM, CHROMIUM_ARGS, start_uvicorn

ROWS = "document.querySelectorAll('[data-testid=fleet-row]').length"


def publish_live(services: Services, seconds: float, skip: str | None = None) -> int:
    """One sample event per host a second (but `skip`), as the sink publishes them; returns how many."""
    sent = 0
    end = time.monotonic() + seconds
    pause = threading.Event()
    while time.monotonic() < end:
        now = time.time()
        for host in services.config.hosts:
            if host.name == skip:
                continue
            wobble = 1.0 + 0.01 * ((sent % 7) - 3)  # every row's numbers change every second: the worst case
            points = {m: [[now, round(v * wobble, 3)]] for m, v in METRICS}
            data = {"host": host.name, "points": points, "stamp_index": dict.fromkeys(points, 0)}
            services.bus.publish("sample", data)
            sent += 1
        pause.wait(max(0.0, 1.0 - (time.time() - now)))
    return sent


def task_seconds(client: Any) -> float:
    metrics = client.send("Performance.getMetrics")["metrics"]
    return float(next(m["value"] for m in metrics if m["name"] == "TaskDuration"))


def measure(size: int, repeat: int, live_s: float) -> tuple[float, float, float, float, float, int]:
    with tempfile.TemporaryDirectory() as root:
        services = services_with(size, Path(root))
        server = start_uvicorn(create_app(services, manage_collectors=False))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                loads = []
                for _ in range(repeat):
                    context = browser.new_context(viewport={"width": 1600, "height": 1000})
                    page = context.new_page()
                    start = time.perf_counter()
                    page.goto(server.url)
                    page.wait_for_function(f"{ROWS} === {size}", timeout=60_000)
                    loads.append(time.perf_counter() - start)
                    context.close()
                context = browser.new_context(viewport={"width": 1600, "height": 1000})
                page = context.new_page()
                page.goto(server.url)
                page.wait_for_function(f"{ROWS} === {size}", timeout=60_000)
                page.wait_for_function("document.getElementById('stream-state').textContent === 'live'",
                                       timeout=30_000)
                page.wait_for_timeout(3000)  # the first host's charts drawn, the start's fetches over
                client = context.new_cdp_session(page)
                client.send("Performance.enable")
                shown = page.evaluate("document.getElementById('host-picker').value")
                before, started = task_seconds(client), time.perf_counter()
                time.sleep(live_s)  # nothing published: the page's own clocks (ages, the 5-s looks)
                works = [(task_seconds(client) - before) / (time.perf_counter() - started)]
                for skip in (shown, None):  # the fleet view's own work, then with the open host's charts
                    before, started = task_seconds(client), time.perf_counter()
                    sent = publish_live(services, live_s, skip)
                    works.append((task_seconds(client) - before) / (time.perf_counter() - started))
                browser.close()
        finally:
            server.stop()
            services.store.close()
    return loads[0], statistics.median(loads), works[0], works[1], works[2], sent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[64, 256])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--live", type=float, default=10.0)
    args = parser.parse_args()
    print(f"{'hosts':>6} {'cold s':>7} {'load s':>8} {'idle ms/s':>10} {'fleet ms/s':>11} "
          f"{'with charts ms/s':>17} {'events/s':>9}")
    for size in args.sizes:
        cold, load, idle, fleet, charts, sent = measure(size, args.repeat, args.live)
        print(f"{size:>6} {cold:>7.2f} {load:>8.2f} {1000 * idle:>10.1f} {1000 * fleet:>11.1f} {1000 * charts:>17.1f} "
              f"{sent / args.live:>9.0f}")


if __name__ == "__main__":
    main()
