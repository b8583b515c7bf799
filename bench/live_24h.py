"""The tab after 24 h of a 1 Hz, 4-rank host: JS heap and main-thread CPU, two page versions side by side.

Accelerated: a store is filled with 24 h of 1 Hz samples of a host with 4 DP ranks and 4 GPUs (the host
series, what the ranks sum to, and each GPU's series), then the page is opened on it in headless
Debian Chromium and the stream goes on from the store's end, each step stored and then published
as the collector does (store commit, then a `sample` event with the host series):
- steady: 60 s at 1 Hz in real time (what a tab costs while it follows one host);
- fast: 1,800 more seconds of data at 30 steps a second (the browser's traces reach their 5,000-point
  bound and are compacted; what memory does after many hours).
Heap: `Runtime.getHeapUsage` after a forced GC (CDP), at load, after steady, after fast. CPU: the
renderer main thread's busy time (`Performance.getMetrics` TaskDuration) over wall time in each phase.
`before` = `--before-static DIR` (the page files swapped, as in bench/dashboard_page_ab.py), `after`
= this checkout; each variant opens its own page on the same store, one after the other.
Usage: PYTHONPATH=. python bench/live_24h.py --before-static DIR
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from playwright.sync_api import sync_playwright

from bench.dashboard_page_ab import swapped
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import Batch, Sample, Store, open_store
from tests.fixtures.web import CHROMIUM, CHROMIUM_ARGS, start_uvicorn, wait_settled

HOST, DAY, RANKS, GPUS = "gpu1", 86_400, 4, 4


def step_samples(t: float, rng: np.random.Generator) -> tuple[list[Sample], dict[str, list[list[float]]]]:
    """One second of the host: its samples to store, and the host series the stream publishes."""
    wave = np.sin(t / 3000)
    per_rank = 350 + 80 * wave + rng.normal(0, 10, RANKS)
    util = 88 + 6 * wave + rng.normal(0, 2, GPUS)
    mem = 70_000 + rng.normal(0, 200, GPUS)
    host = {"gen_throughput": float(per_rank.sum()), "input_throughput": float(abs(rng.normal(3000, 900))),
            "token_usage": float(0.9 + 0.05 * wave), "running_req": float(120 + 20 * wave),
            "queue_req": float(max(0.0, 30 + 25 * wave)), "gpu_util_pct": float(util.mean()),
            "gpu_util_pct_max": float(util.max()), "gpu_mem_used_mib": float(mem.max())}
    samples = [Sample(m, "", t, v) for m, v in host.items()]
    samples += [Sample("gen_throughput", f"DP{r}", t, float(per_rank[r])) for r in range(RANKS)]
    samples += [Sample("gpu_util_pct", f"GPU{g}", t, float(util[g])) for g in range(GPUS)]
    samples += [Sample("gpu_mem_used_mib", f"GPU{g}", t, float(mem[g])) for g in range(GPUS)]
    return samples, {m: [[t, v]] for m, v in host.items()}


def fill(store: Store, end: float) -> None:
    rng = np.random.default_rng(0)
    batch: list[Sample] = []
    for t in np.arange(end - DAY, end, 1.0):
        batch += step_samples(float(t), rng)[0]
        if len(batch) > 50_000:
            store.commit(Batch(HOST, "server_log", "/l", batch))
            batch = []
    store.commit(Batch(HOST, "server_log", "/l", batch))


class Stream:
    def __init__(self, services: Services, start: float) -> None:
        self.services, self.t, self.rng = services, start, np.random.default_rng(1)

    def step(self) -> None:
        samples, points = step_samples(self.t, self.rng)
        self.services.store.commit(Batch(HOST, "server_log", "/l", samples))
        self.services.bus.publish("sample", {"host": HOST, "points": points})
        self.t += 1

    def run(self, steps: int, rate: float) -> None:
        started = time.monotonic()
        for i in range(steps):
            self.step()
            time.sleep(max(0.0, started + (i + 1) / rate - time.monotonic()))


def heap_mb(cdp: Any) -> float:
    cdp.send("HeapProfiler.collectGarbage")
    return round(cdp.send("Runtime.getHeapUsage")["usedSize"] / 2**20, 1)


def busy_s(cdp: Any) -> float:
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return float(metrics["TaskDuration"])


def measure(page: Any, url: str, stream: Stream) -> dict[str, Any]:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.goto(url)
    wait_settled(page, timeout=120_000)
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=30_000)
    out: dict[str, Any] = {"heap_mb_load": heap_mb(cdp)}
    for phase, steps, rate in (("steady_1hz", 60, 1.0), ("fast_30x", 1800, 30.0)):
        busy, wall = busy_s(cdp), time.monotonic()
        stream.run(steps, rate)
        page.wait_for_timeout(3000)  # what was queued is drawn
        wall = time.monotonic() - wall
        out[f"cpu_{phase}"] = round((busy_s(cdp) - busy) / wall, 3)
        out[f"heap_mb_{phase}"] = heap_mb(cdp)
    out["points_in_charts"] = page.evaluate(
        "[...document.querySelectorAll('main .chart')].reduce((n, c) => n + (c.data || [])"
        ".reduce((m, t) => m + t.x.length, 0), 0)")
    out["dom_nodes"] = page.evaluate("document.getElementsByTagName('*').length")
    cdp.detach()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before-static", type=Path, required=True)
    args = parser.parse_args()
    store = open_store(str(Path(tempfile.mkdtemp(prefix="kvwatch-24h-")) / "kvwatch.db"))
    end = float(int(time.time()) - 120)
    started = time.perf_counter()
    fill(store, end)
    print(f"24 h of a {RANKS}-rank, {GPUS}-GPU host stored in {time.perf_counter() - started:.0f} s", flush=True)
    host = HostConfig(name=HOST, ssh="local", server_log="/l")
    services = Services(config=Config(server=ServerConfig(), hosts=(host,)), store=store)
    app = create_app(services, manage_collectors=False)
    stream = Stream(services, end)
    servers = {"before": start_uvicorn(swapped(app, args.before_static, False)),  # type: ignore[arg-type]
               "after": start_uvicorn(app)}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name, server in servers.items():
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                load = os.getloadavg()[0]
                result = measure(page, server.url, stream)
                page.close()
                print(json.dumps({"variant": name, **result, "load_avg": [load, os.getloadavg()[0]]}), flush=True)
            browser.close()
    finally:
        for server in servers.values():
            server.stop()
        store.close()


if __name__ == "__main__":
    main()
