"""Benchmark: the page with six charts, two page versions side by side in one sitting.

`dashboard_page.py` times one version; on this shared machine the load changes between two runs
of it, so a before/after ratio from two runs is noise. Here each variant is the same app and store
with the page files (`static/`) and the plotly.js answer swapped, and every round loads each
variant once, in turn, in a fresh browser context (`--warm`: one browser profile per variant,
reopened).
Variants: `before` = `--before-static DIR` (e.g. a worktree of main) with plotly's file as is;
`after` = this checkout's app; `after-nohint` = this checkout's page without the compile hint.
Usage: python bench/dashboard_page_ab.py --before-static ../main/static [--rounds 5] [--warm]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright
from starlette.responses import FileResponse
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from bench.dashboard_page import DAY, HOST, METRICS, VIEWPORT, fill
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import open_store
from kvwatch.app.vendor import PLOTLY_JS
from tests.fixtures.web import CHROMIUM, CHROMIUM_ARGS, RunningServer, start_uvicorn

MARKS = "['kvwatch-start', 'kvwatch-charts-drawn'].map(n => performance.getEntriesByName(n)[0].startTime)"
# Started: the charts' aria-busy went false; a `--before-static` page older than that set a window flag.
STARTED = ("document.getElementById('charts')?.getAttribute('aria-busy') === 'false'"
           " || window['kvwatch' + 'Ready'] === true")


def wait_started(page: Any, timeout: float) -> None:
    page.wait_for_function(STARTED, timeout=timeout)


def swapped(inner: ASGIApp, static_dir: Path | None, plain_plotly: bool) -> ASGIApp:
    """`inner` with `/`, `/static/*` answered from `static_dir`, plotly.js as main served it (no hint)."""
    static = StaticFiles(directory=static_dir) if static_dir else None
    vendor = StaticFiles(directory=PLOTLY_JS.parent)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and plain_plotly and path == "/vendor/plotly.min.js":
            return await vendor(dict(scope, path="/plotly.min.js", root_path=""), receive, send)
        if scope["type"] == "http" and static_dir and static and path == "/":
            return await FileResponse(static_dir / "index.html")(scope, receive, send)
        if scope["type"] == "http" and static_dir and static and path.startswith("/static/"):
            return await static(dict(scope, path=path[len("/static"):], root_path=""), receive, send)
        return await inner(scope, receive, send)

    return app


@dataclass
class Variant:
    name: str
    server: RunningServer
    ready: list[float] = field(default_factory=list)
    plotly: list[float] = field(default_factory=list)
    drawn: list[float] = field(default_factory=list)

    def report(self) -> str:
        med = statistics.median
        return (f"{self.name:13s} interactive median {med(self.ready):5.0f} ms (best {min(self.ready):5.0f}) | "
                f"plotly ready {med(self.plotly):5.0f} | charts drawn {med(self.drawn):5.0f} | "
                f"runs {[round(r) for r in self.ready]}")


def load(context: Any, variant: Variant) -> None:
    page = context.new_page()
    page.goto(variant.server.url)
    wait_started(page, timeout=60_000)
    variant.ready.append(page.evaluate("performance.now()"))
    plotly, drawn = page.evaluate(MARKS)
    variant.plotly.append(plotly)
    variant.drawn.append(drawn)
    page.close()


def warm_profile(playwright: Any, variant: Variant) -> Any:
    """A browser profile on disk (incognito contexts keep no V8 code cache) that has loaded the page twice:
    the first load fills the HTTP cache, the second writes plotly.js's code cache."""
    context = playwright.chromium.launch_persistent_context(
        tempfile.mkdtemp(prefix="kvwatch-profile-"), executable_path=CHROMIUM, args=CHROMIUM_ARGS, viewport=VIEWPORT)
    for _ in range(2):
        load(context, Variant("warm-up", variant.server))
    return context


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before-static", type=Path, required=True)
    parser.add_argument("--days", type=float, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warm", action="store_true")
    args = parser.parse_args()
    store = open_store(str(Path(tempfile.mkdtemp(prefix="kvwatch-page-ab-")) / "kvwatch.db"))
    fill(store, int(args.days))
    print(f"{int(args.days * DAY) * (len(METRICS) + 1):,} samples stored; load average before: {os.getloadavg()}")
    host = HostConfig(name=HOST, ssh="local", server_log="/l", target_completions=100_000)
    services = Services(config=Config(server=ServerConfig(), hosts=(host,)), store=store)
    app = create_app(services, manage_collectors=False)
    variants = [Variant("before", start_uvicorn(swapped(app, args.before_static, True))),  # type: ignore[arg-type]
                Variant("after-nohint", start_uvicorn(swapped(app, None, True))),  # type: ignore[arg-type]
                Variant("after", start_uvicorn(app))]
    started = time.time()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            warm = {v.name: warm_profile(playwright, v) for v in variants} if args.warm else {}
            for _ in range(args.rounds):
                for variant in variants:
                    context = warm.get(variant.name) or browser.new_context(viewport=VIEWPORT)
                    load(context, variant)
                    if not args.warm:
                        context.close()
            for context in warm.values():
                context.close()
            browser.close()
    finally:
        for variant in variants:
            variant.server.stop()
        store.close()
    print(f"{'warm' if args.warm else 'cold'}, {args.rounds} rounds in {time.time() - started:.0f} s, "
          f"load average after: {os.getloadavg()}")
    for variant in variants:
        print(variant.report())


if __name__ == "__main__":
    main()
