"""One theme everywhere, in Debian's Chromium: the theme button re-colours every plotly figure on the
page from the CSS custom properties (static/theme.js), the compare view's overlay included, its runs'
lines and steady shading too."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import start_services, wait_until
from tests.browser.world import ScriptedRun
from tests.compare.synth import THREE_CONFIGS, write_log
from tests.fixtures.web import block_outside_requests, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# Every drawn figure's colours next to the page's custom properties.
FIGURES = """() => {
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return [...document.querySelectorAll('.js-plotly-plot')].map((figure) => ({
    id: figure.id, font: figure.layout.font.color, fg: css('--fg'), grid: css('--grid'),
    grids: Object.keys(figure.layout).filter((k) => /^[xy]axis\\d*$/.test(k))
      .map((k) => figure.layout[k].gridcolor).filter((c) => c !== undefined),
  }));
}"""
# The overlay's first run next to the first series colour: its line and its steady window's shading.
OVERLAY_RUN = """() => {
  const overlay = document.getElementById('cmp-overlay');
  return {line: overlay.data[0].line.color, shade: overlay.layout.shapes[0].fillcolor,
          accent: getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()};
}"""


@pytest.fixture
def compared(tmp_path: Path, serve_app: Any) -> str:
    specs = tuple(replace(spec, duration_s=900.0) for spec in THREE_CONFIGS[:2])
    write_log(tmp_path / "server.log", specs, seed=3)
    decode_lines = sum("Decode batch" in line for line in (tmp_path / "server.log").open())
    services = start_services(tmp_path)
    running = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) == decode_lines, timeout=60)
    return str(running.url)


def figures_follow(page: Any) -> list[dict[str, Any]]:
    figures: list[dict[str, Any]] = page.evaluate(FIGURES)
    for figure in figures:
        assert figure["font"] == figure["fg"], figure
        assert figure["grids"] and set(figure["grids"]) == {figure["grid"]}, figure
    return figures


def test_the_theme_button_recolours_every_chart_and_the_overlay(compared: str, page: Any) -> None:
    outside = block_outside_requests(page)
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(compared)
    wait_settled(page, timeout=30_000)
    page.wait_for_function("Number(document.getElementById('compare-view').dataset.loaded) >= 1", timeout=30_000)
    page.wait_for_function("document.getElementById('cmp-overlay').classList.contains('js-plotly-plot')")
    light = figures_follow(page)
    assert "cmp-overlay" in {f["id"] for f in light} and len(light) >= 7  # six charts and the overlay
    light_run = page.evaluate(OVERLAY_RUN)
    assert light_run["line"] == light_run["shade"] == light_run["accent"], light_run
    page.locator("#theme").click()  # auto -> light
    page.locator("#theme").click()  # light -> dark
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.wait_for_function("document.getElementById('cmp-overlay').layout.font.color"
                           " === getComputedStyle(document.documentElement).getPropertyValue('--fg').trim()")
    dark = figures_follow(page)
    assert {f["fg"] for f in dark} != {f["fg"] for f in light}
    page.wait_for_function(f"document.getElementById('cmp-overlay').data[0].line.color !== '{light_run['line']}'")
    dark_run = page.evaluate(OVERLAY_RUN)
    assert dark_run["line"] == dark_run["shade"] == dark_run["accent"] != light_run["accent"], dark_run
    page.screenshot(path=str(ARTIFACTS / "theme-dark.png"), full_page=True)
    page.locator("#theme").click()  # dark -> auto, and the system is light
    page.wait_for_function("document.getElementById('cmp-overlay').layout.font.color"
                           f" === '{light[0]['fg']}'")
    figures_follow(page)
    page.emulate_media(color_scheme="dark")  # auto follows the system, live
    page.wait_for_function("document.getElementById('cmp-overlay').layout.font.color"
                           f" === '{dark[0]['fg']}'")
    figures_follow(page)
    assert outside == []


LINES = """() => {
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const chart = document.getElementById('chart-usage');
  return {line: chart.data[0].line.color, accent: css('--accent'),
          threshold: chart.layout.shapes.find((s) => s.name === 'threshold').line.color, bad: css('--bad')};
}"""


def test_the_lines_and_the_threshold_follow_the_theme(tmp_path: Path, serve_app: Any, page: Any) -> None:
    url = serve_app(create_app(build_services(ScriptedRun(tmp_path).config()))).url
    page.emulate_media(color_scheme="light")
    outside = block_outside_requests(page)
    page.goto(url)
    wait_settled(page, timeout=30_000)
    light = page.evaluate(LINES)
    assert light["line"] == light["accent"] and light["threshold"] == light["bad"], light
    page.locator("#theme").click()  # auto -> light
    page.locator("#theme").click()  # light -> dark
    page.wait_for_function(f"document.getElementById('chart-usage').data[0].line.color !== '{light['line']}'")
    dark = page.evaluate(LINES)
    assert dark["line"] == dark["accent"] != light["accent"] and dark["threshold"] == dark["bad"], dark
    assert outside == []
