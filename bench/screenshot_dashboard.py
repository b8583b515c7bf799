"""The README's picture: the page during `kvwatch demo`'s saturated run, in headless Debian Chromium.

Starts the demo world (simulated SGLang server and client) and the app on a free loopback port, waits
until the saturated run has fired the token-usage alert and settled for `--settle` seconds, then saves
a full-page screenshot. Every request that is not to 127.0.0.1 is aborted (and counted: must be 0).
Usage: PYTHONPATH=. python bench/screenshot_dashboard.py [--out tests/browser/screenshots/dashboard.png] [--settle 40]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from kvwatch.app.commands.demo import adopt_when_settled, demo_config, use_simulated_gpus
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.simulator.demo import start_demo_world
from tests.fixtures.web import CHROMIUM, CHROMIUM_ARGS, block_outside_requests, start_uvicorn, wait_panels, wait_settled

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tests" / "browser" / "screenshots" / "dashboard.png"


def shoot(out: Path, settle_s: float) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="kvwatch-shot-"))
    world = start_demo_world(workdir)
    use_simulated_gpus(world)
    services = build_services(demo_config(world, workdir))
    server = start_uvicorn(create_app(services))
    adopt_when_settled(world, services)  # as `kvwatch demo` does: the controller takes over the story's server
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            outside = block_outside_requests(page)
            page.goto(server.url)
            wait_settled(page, timeout=60_000)
            page.wait_for_selector("#alert-banner:not([hidden])", timeout=180_000)
            time.sleep(settle_s)  # let the live charts run on past the alert
            page.reload()  # the panels read the runs and the controller once per load
            wait_settled(page, timeout=60_000)
            wait_panels(page)
            page.wait_for_timeout(2000)  # the overlay chart draws after the compare table
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=True)
            browser.close()
        print(f"wrote {out}; requests outside 127.0.0.1: {len(outside)}")
        return 1 if outside else 0
    finally:
        server.stop()
        world.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--settle", type=float, default=40.0, help="seconds to wait after the alert fires")
    args = parser.parse_args()
    return shoot(args.out, args.settle)


if __name__ == "__main__":
    raise SystemExit(main())
