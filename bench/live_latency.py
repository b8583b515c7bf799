"""Append-to-pixel: an SGLang decode line appended on a host (real sshd on loopback) until its value is
drawn in a chart of the open page in headless Debian Chromium, beside append-to-stored in the same run.

`kvwatch serve` as built by `runner.build_services` (HostCollector over SSH, SQLite store, the app on
uvicorn); the page is the real dashboard. Line n carries gen throughput 900 + n, so each value names
its line. For every line, one after the other at a random 150-300 ms pace:
- stored: `/api/series` (polled every 5 ms over HTTP) first answers with the value;
- drawn: the first animation frame after the throughput chart's SVG changed with the value in its
  data (plotly draws SVG synchronously; that frame paints it).
Both are wall-clock instants on this machine (time.time() and performance.timeOrigin + now()).
The requests chart is watched the same way (its running line carries n): it is drawn after the
throughput chart, so it shows what a chart further down the page waits.
In the page, each `Plotly.redraw` (the live path's redraw) and `Plotly.relayout` is timed by wrapping
plotly's functions from the bench (the page has no hook for it), and long tasks are counted.

With `--before-static DIR` (e.g. `git archive <commit> static | tar -x -C DIR`), the page files are
swapped like bench/dashboard_page_ab.py does, and `before` and `after` alternate in one sitting, each
round with its own host log, store and app: the load of this shared machine changes by the minute.
usage: PYTHONPATH=. python bench/live_latency.py [N_LINES] [--before-static DIR] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

from bench._sshd import pct, throwaway_sshd
from bench.dashboard_page_ab import swapped, wait_started
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
    window.drawnAt = {'chart-throughput': {}, 'chart-requests': {}};
    for (const id of Object.keys(window.drawnAt)) {
        const chart = document.getElementById(id);
        const seen = window.drawnAt[id];
        let asked = false;
        const look = () => {
            asked = false;
            const y = chart.data?.[0]?.y || [];
            const now = performance.timeOrigin + performance.now();
            for (let i = Math.max(0, y.length - 64); i < y.length; i++) if (!(y[i] in seen)) seen[y[i]] = now;
        };
        new MutationObserver(() => { if (!asked) { asked = true; requestAnimationFrame(look); } })
            .observe(chart, {subtree: true, childList: true, attributes: true});
        look();
    }
    window.timed = {redraw: [], relayout: [], longtasks: 0, longtask_ms: 0};
    for (const name of ['redraw', 'relayout']) {
        const original = Plotly[name];
        Plotly[name] = function (...args) {
            const start = performance.now();
            const out = original.apply(this, args);
            window.timed[name].push(performance.now() - start);
            return out;
        };
    }
    new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
            window.timed.longtasks += 1;
            window.timed.longtask_ms += entry.duration;
        }
    }).observe({entryTypes: ['longtask']});
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


def ms(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"p50": round(pct(values, 0.5), 1), "p95": round(pct(values, 0.95), 1), "max": round(max(values), 1)}


def run(n: int, server: Sshd, tmp: Path, page: Any, static: Path | None = None) -> dict[str, object]:
    log = server.dir / "server.log"
    log.unlink(missing_ok=True)
    append_lines(log, 1, HISTORY)
    services = build_services(config(server, tmp))
    app = start_uvicorn(swapped(create_app(services), static, False) if static else create_app(services))
    load = [os.getloadavg()[0]]
    try:
        with httpx.Client(base_url=app.url, timeout=5) as client:
            if wait_stored(client, 900 + HISTORY, timeout=20) is None:
                raise RuntimeError("history never stored")
            page.goto(app.url)
            wait_started(page, timeout=30_000)
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
            timed = page.evaluate("window.timed")
            load.append(os.getloadavg()[0])
    finally:
        page.goto("about:blank")  # the stream closes before the server stops
        app.stop()  # its lifespan stops the collectors
    to_store = [(stored[k] - a) * 1000 for k, a in appended.items() if stored[k] is not None]
    seen, requests = drawn["chart-throughput"], drawn["chart-requests"]
    to_pixel = [seen[str(900 + k)] - a * 1000 for k, a in appended.items() if str(900 + k) in seen]
    to_requests = [requests[str(k)] - a * 1000 for k, a in appended.items() if str(k) in requests]
    return {"lines": n, "stored": len(to_store), "drawn": len(to_pixel),
            "append_to_stored_ms": ms(to_store), "append_to_pixel_ms": ms(to_pixel),
            "append_to_pixel_requests_chart_ms": ms(to_requests),
            "redraw_ms": {"n": len(timed["redraw"]), **ms(timed["redraw"])},
            "relayout_ms": {"n": len(timed["relayout"]), **ms(timed["relayout"])},
            "long_tasks": timed["longtasks"], "long_task_ms": round(timed["longtask_ms"]),
            "load_avg": load}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("lines", type=int, nargs="?", default=60)
    parser.add_argument("--before-static", type=Path)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    variants: list[tuple[str, Path | None]] = [("after", None)]
    if args.before_static:
        variants.insert(0, ("before", args.before_static))
    results: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
    with throwaway_sshd() as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(args.rounds):
                for name, static in variants:
                    page = browser.new_page(viewport={"width": 1600, "height": 1000})
                    with tempfile.TemporaryDirectory() as tmp:
                        result = run(args.lines, server, Path(tmp), page, static)
                    page.close()
                    results[name].append(result)
                    print(json.dumps({"variant": name, **result}), flush=True)
        finally:
            browser.close()
    for name, runs in results.items():
        p95 = [r["append_to_pixel_ms"]["p95"] for r in runs]
        p50 = [r["append_to_pixel_ms"]["p50"] for r in runs]
        print(f"{name}: append-to-pixel p50 median {statistics.median(p50)} ms, p95 median {statistics.median(p95)} ms")


if __name__ == "__main__":
    main()
