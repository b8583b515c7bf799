"""Benchmark: the page with six charts, in headless Debian Chromium, until interactive.

A store holds `--days` of 1 Hz history for every charted metric; the page is opened in a fresh
browser context each time (cold cache, plotly.js included) and timed from navigation start to
the charts' `aria-busy` going false (every chart drawn from its history, stream open). Then one zoom:
the time from the relayout to every chart redrawn with the window fetched from the server.
`--warm` reopens the page in one browser profile instead (HTTP cache and V8 code cache warm: reopening the
tab); it is a profile on disk, as a person's browser has: Chromium keeps no code cache for incognito contexts.
`--plotly-bundle FILE` answers /vendor/plotly.min.js with another build (e.g. npm's plotly-basic) to
measure what a smaller bundle would save; the app itself serves the plotly package's file.
Usage: python bench/dashboard_page.py [--days 1] [--repeat 5] [--warm] [--plotly-bundle FILE]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from playwright.sync_api import ViewportSize, sync_playwright

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import Batch, Sample, Store, open_store
from tests.fixtures.web import CHROMIUM, CHROMIUM_ARGS, start_uvicorn, wait_settled

HOST, DAY = "gpu1", 86_400
VIEWPORT: ViewportSize = {"width": 1600, "height": 1000}
METRICS = {
    "gen_throughput": (1500, 400), "input_throughput": (3000, 900), "token_usage": (0.9, 0.08),
    "running_req": (120, 30), "queue_req": (40, 30), "gpu_util_pct": (90, 8), "gpu_mem_used_mib": (70000, 500),
}

# One zoom on the usage chart; resolves once every chart is refetched and redrawn (the relayout's handler
# marks the charts aria-busy before the relayout returns; they are not busy once the window is drawn).
ZOOM = """async () => {
    const el = document.getElementById('chart-usage');
    const [a, b] = el.layout.xaxis.range.map((x) => new Date(x).getTime());
    const t0 = performance.now();
    const range = [new Date(a + (b - a) * 0.4), new Date(a + (b - a) * 0.5)];
    await Plotly.relayout(el, {'xaxis.range': range});
    while (document.getElementById('charts').getAttribute('aria-busy') !== 'false') {
        if (performance.now() - t0 > 30000) throw new Error("zoom did not complete in 30 s");
        await new Promise((r) => setTimeout(r, 5));
    }
    return performance.now() - t0;
}"""


def fill(store: Store, days: int) -> None:
    end = time.time()
    t = end - days * DAY + np.arange(days * DAY, dtype=np.float64)
    rng = np.random.default_rng(0)
    series = {m: mid + spread * np.sin(t / 3000 + i) + rng.normal(0, spread / 20, len(t))
              for i, (m, (mid, spread)) in enumerate(METRICS.items())}
    series["completions"] = np.floor((t - t[0]) * 0.4)
    for start in range(0, len(t), 3600):
        part = slice(start, start + 3600)
        samples = [Sample(m, "", a, b) for m, v in series.items()
                   for a, b in zip(t[part].tolist(), v[part].tolist(), strict=True)]
        store.commit(Batch(HOST, "server_log", "/l", samples))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=float, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--plotly-bundle", type=Path)
    args = parser.parse_args()
    store = open_store(str(Path(tempfile.mkdtemp(prefix="kvwatch-page-")) / "kvwatch.db"))
    started = time.perf_counter()
    fill(store, int(args.days))
    print(f"{int(args.days * DAY) * (len(METRICS) + 1):,} samples stored in {time.perf_counter() - started:.0f} s")
    host = HostConfig(name=HOST, ssh="local", server_log="/l", target_completions=100_000)
    services = Services(config=Config(server=ServerConfig(), hosts=(host,)), store=store)
    server = start_uvicorn(create_app(services, manage_collectors=False))
    ready: list[float] = []
    zoom: list[float] = []
    marks: list[list[float]] = []
    try:
        with sync_playwright() as playwright:
            bundle = args.plotly_bundle.read_bytes() if args.plotly_bundle else None

            def routed(context: Any) -> Any:
                if bundle is not None:
                    context.route("**/vendor/plotly.min.js",
                                  lambda route: route.fulfill(body=bundle, content_type="text/javascript"))
                return context

            if args.warm:
                # A profile on disk: Chromium keeps no V8 code cache for new_context()'s in-memory contexts.
                context = routed(playwright.chromium.launch_persistent_context(
                    tempfile.mkdtemp(prefix="kvwatch-profile-"), executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                    viewport=VIEWPORT))
                for _ in range(2):  # the first load fills the HTTP cache, the second writes plotly's code cache
                    warm_up = context.new_page()
                    warm_up.goto(server.url)
                    wait_settled(warm_up, timeout=60_000)
                    warm_up.close()
            else:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                context = routed(browser.new_context(viewport=VIEWPORT))
            for _ in range(args.repeat):
                page = context.new_page()
                page.goto(server.url)
                wait_settled(page, timeout=60_000)
                ready.append(page.evaluate("performance.now()"))
                marks.append(page.evaluate(
                    "['kvwatch-start', 'kvwatch-charts-drawn'].map(n => performance.getEntriesByName(n)[0].startTime)"))
                zoom.append(page.evaluate(ZOOM))
                page.close()
                if not args.warm:
                    context.close()
                    context = routed(browser.new_context(viewport=VIEWPORT))
            context.close()
            if not args.warm:
                browser.close()
    finally:
        server.stop()
        store.close()
    print(f"interactive (navigation -> six charts drawn, stream open): median {statistics.median(ready):.0f} ms, "
          f"best {min(ready):.0f} ms, runs {[round(r) for r in ready]}")
    print(f"  of which plotly.js loaded and parsed: median {statistics.median(m[0] for m in marks):.0f} ms; "
          f"six charts drawn with history: median {statistics.median(m[1] for m in marks):.0f} ms")
    print(f"zoom (relayout -> six charts refetched and redrawn): median {statistics.median(zoom):.0f} ms, "
          f"best {min(zoom):.0f} ms")


if __name__ == "__main__":
    main()
