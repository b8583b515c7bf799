"""Append-to-pixel: an SGLang decode line appended on a host (real sshd on loopback) until its value is
drawn in a chart of the open page in headless Debian Chromium, beside append-to-stored in the same run.

`kvwatch serve` as built by `runner.build_services` (HostCollector over SSH, SQLite store, the app on
uvicorn); the page is the real dashboard. Line n carries gen throughput 900 + n, so each value names
its line. For every line, one after the other at a random 150-300 ms pace:
- stored: `/api/series` (polled every 5 ms over HTTP) first answers with the value;
- drawn: the first animation frame after the throughput chart's SVG changed with the value in its
  data (plotly draws SVG synchronously; that frame paints it).
Both are wall-clock instants on this machine (time.time() and performance.timeOrigin + now()).
usage: PYTHONPATH=. python bench/live_latency.py [N_LINES]
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

from bench._sshd import pct, throwaway_sshd
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import append_lines
from tests.fixtures.sshd import Sshd
from tests.fixtures.web import CHROMIUM, CHROMIUM_ARGS, start_uvicorn

HISTORY = 30
# When the chart's SVG changes, one animation frame later (the paint): stamp the values first seen.
# Watching for changes, rather than polling every frame, keeps the watcher from making frames itself.
WATCH = """() => {
    window.drawnAt = {};
    const chart = document.getElementById('chart-throughput');
    let asked = false;
    const look = () => {
        asked = false;
        const y = chart.data?.[0]?.y || [];
        const now = performance.timeOrigin + performance.now();
        for (let i = Math.max(0, y.length - 64); i < y.length; i++) {
            if (!(y[i] in window.drawnAt)) window.drawnAt[y[i]] = now;
        }
    };
    new MutationObserver(() => { if (!asked) { asked = true; requestAnimationFrame(look); } })
        .observe(chart, {subtree: true, childList: true, attributes: true});
    look();
}"""


def config(server: Sshd, tmp: Path) -> Config:
    host = HostConfig(name="gpu1", ssh=server.spec, identity_file=server.key_path,
                      known_hosts=server.known_hosts_path, server_log=str(server.dir / "server.log"))
    return Config(server=ServerConfig(data_dir=str(tmp), database="kvwatch.db"), hosts=(host,))


def wait_stored(client: httpx.Client, value: float, timeout: float = 5.0) -> float | None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        points = client.get("/api/series", params={"host": "gpu1", "metric": "gen_throughput"}).json()["points"]
        if any(v == value for _, v in points[-8:]):
            return time.time()
        time.sleep(0.005)
    return None


def run(n: int, server: Sshd, tmp: Path, page: Any) -> dict[str, object]:
    log = server.dir / "server.log"
    append_lines(log, 1, HISTORY)
    services = build_services(config(server, tmp))
    app = start_uvicorn(create_app(services))
    try:
        with httpx.Client(base_url=app.url, timeout=5) as client:
            if wait_stored(client, 900 + HISTORY, timeout=20) is None:
                raise RuntimeError("history never stored")
            page.goto(app.url)
            page.wait_for_function("window.kvwatchReady === true", timeout=30_000)
            page.wait_for_function("document.getElementById('stream-state').textContent === 'live'")
            page.evaluate(WATCH)
            appended, stored = {}, {}
            for line in range(HISTORY + 1, HISTORY + n + 1):
                appended[line] = time.time()
                append_lines(log, line, 1)
                stored[line] = wait_stored(client, 900 + line)
                time.sleep(max(0.0, appended[line] + random.uniform(0.15, 0.3) - time.time()))
            time.sleep(2)
            drawn = page.evaluate("window.drawnAt")
    finally:
        page.goto("about:blank")  # the stream closes before the server stops
        app.stop()  # its lifespan stops the collectors
    to_store = [(stored[k] - a) * 1000 for k, a in appended.items() if stored[k] is not None]
    to_pixel = [drawn[str(900 + k)] - a * 1000 for k, a in appended.items() if str(900 + k) in drawn]
    return {"lines": n, "stored": len(to_store), "drawn": len(to_pixel),
            "append_to_stored_ms": {"p50": round(pct(to_store, 0.5), 1), "p95": round(pct(to_store, 0.95), 1)},
            "append_to_pixel_ms": {"p50": round(pct(to_pixel, 0.5), 1), "p95": round(pct(to_pixel, 0.95), 1),
                                   "max": round(max(to_pixel), 1)},
            "load_avg": os.getloadavg()[0]}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    with throwaway_sshd() as server, tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        try:
            print(json.dumps(run(n, server, Path(tmp), page)), flush=True)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
