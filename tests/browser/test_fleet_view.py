"""The fleet view in Chromium with 32 hosts (issue #35): it leads the page, a host whose alert starts
firing moves to the top within 2 s through the stream, and a click on its row opens that host."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.alerts import start_alerting
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.sqlite import SqliteStore
from tests.fixtures.web import open_dashboard, wait_panels

pytestmark = pytest.mark.browser
HOSTS = tuple(f"node{i:02d}" for i in range(32))
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TOP = "document.querySelector('[data-testid=fleet-row]')?.dataset.host"


@pytest.fixture
def fleet(tmp_path: Path, serve_app: Any) -> Iterator[tuple[str, Services]]:
    """32 hosts whose samples the test commits itself (no collector), alerting every 0.2 s."""
    hosts = tuple(HostConfig(name=name, ssh="local", server_log=str(tmp_path / "none.log"),
                             target_completions=5000 if name == "node01" else None) for name in HOSTS)
    services = Services(Config(server=ServerConfig(data_dir=str(tmp_path)), hosts=hosts),
                        SqliteStore(str(tmp_path / "kvwatch.db")))
    now = time.time()
    for index, name in enumerate(HOSTS):
        usage = () if name == "node17" else (("token_usage", 0.6),)  # node17's usage comes in the test
        samples = [Sample(metric, "", now - 300 + i, value) for i in range(0, 300, 5)
                   for metric, value in (("gen_throughput", 800.0 + index), ("running_req", 40.0),
                                         ("queue_req", 0.0), *usage)]
        if name == "node01":  # 1 completion a second: 4,700 to go
            samples += [Sample("completions", "", now - 300 + i, 1.0 + i) for i in range(300)]
        services.store.commit(Batch(name, "server_log", "/l", samples=samples))
    server = serve_app(create_app(services, manage_collectors=False))
    services.alerts = start_alerting(services, interval=0.2)
    yield server.url, services
    server.stop()  # before the store closes: a request still in flight must not read a closed store
    services.stop()


def test_a_host_whose_alert_fires_moves_to_the_top_and_a_click_opens_it(
    fleet: tuple[str, Services], page: Any
) -> None:
    url, services = fleet
    outside = open_dashboard(page, url)
    page.wait_for_function("document.querySelectorAll('[data-testid=fleet-row]').length === 32", timeout=15_000)
    assert page.evaluate(TOP) == "node00"
    totals = page.locator("[data-testid=fleet-totals]").inner_text()
    tokens = sum(800 + i for i in range(32))
    assert totals == f"32 hosts · {tokens:,} tok/s · 300 of 5,000 done · job ETA 1 h 18 min", totals
    cells = page.locator("[data-testid=fleet-row][data-host=node01] td").all_inner_texts()
    assert cells[9:11] == ["300 / 5,000", "1 h 18 min"], cells  # 4,700 at 1 a second
    # each row's sparklines: the last 15 minutes' tok/s and usage, drawn where there were samples
    lines = page.locator("[data-testid=fleet-row][data-host=node01] svg.spark polyline")
    assert lines.count() == 2
    usage_points = lines.nth(1).get_attribute("points").split()
    assert all(point.endswith(",6.6") for point in usage_points), usage_points  # 0.6 of 14 px under a 1.0 top
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=10_000)
    now = time.time()
    usage = [Sample("token_usage", "", now - 290 + 5 * i, 0.97) for i in range(57)]  # in the run, for 280 s
    services.store.commit(Batch("node17", "server_log", "/l", samples=usage))
    deadline = time.monotonic() + 15
    while not (any(a["rule"] == "token_usage_high" and a["state"] == "firing" for a in
                             httpx.get(f"{url}/api/alerts", params={"host": "node17"}).json())):
        assert time.monotonic() < deadline, "the alert never fired"
        time.sleep(0.05)
    fired = time.monotonic()
    # at the top and marked as alerting, both within 2 s (a `fleet` event made from a row read just before
    # the alert was stored may show it unmarked for a moment; the next one, on the alert's news, marks it)
    page.wait_for_function(f"{TOP} === 'node17' && document.querySelector("
                           "'[data-testid=fleet-row][data-host=node17]').dataset.attention === 'alert'", timeout=2_000)
    moved_after = time.monotonic() - fired
    assert moved_after <= 2.0, moved_after
    row = page.locator("[data-testid=fleet-row][data-host=node17]")
    assert "firing: token_usage_high" in row.inner_text()
    page.screenshot(path=str(ARTIFACTS / "fleet-view-32-hosts.png"))
    row.click()
    page.wait_for_function("document.getElementById('host-picker').value === 'node17'", timeout=5_000)
    page.wait_for_function("new URLSearchParams(location.search).get('host') === 'node17'", timeout=5_000)
    assert outside == []


def test_the_fleet_view_follows_the_stream_s_fleet_events_without_reading_the_fleet_again(
    fleet: tuple[str, Services], page: Any
) -> None:
    """Live numbers arrive as `fleet` events (only changed rows), the page's stream carries the shown
    host's samples only, and a row off screen is written when it scrolls into view."""
    url, services = fleet
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    open_dashboard(page, url)
    page.wait_for_function("document.querySelectorAll('[data-testid=fleet-row]').length === 32", timeout=15_000)
    page.set_viewport_size({"width": 1280, "height": 400})
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=10_000)
    assert any(u.startswith(f"{url}/api/stream?samples_of=node00") for u in asked), asked
    page.wait_for_timeout(1500)  # the fleet read once more after the stream's hello, then only events
    reads_before = sum("/api/fleet" in u for u in asked)
    last = "[...document.querySelectorAll('[data-testid=fleet-row]')].at(-1)"
    assert page.evaluate(f"{last}.dataset.host") == "node31"
    page.wait_for_function(f"{last}.hidden", timeout=3_000)  # far below a 400-px screen: not displayed
    for _ in range(4):
        now = time.time()
        for host, value in (("node05", 1234.0), ("node31", 4321.0)):
            services.bus.publish("sample", {"host": host, "points": {"gen_throughput": [[now, value]]}})
        page.wait_for_timeout(1000)
    tok_s = "[data-testid=fleet-row][data-host=node05] td:nth-child(4)"
    page.wait_for_function(f"document.querySelector('{tok_s}').textContent === '1,234'", timeout=3_000)
    assert sum("/api/fleet" in u for u in asked) == reads_before, "the page read /api/fleet again"
    total = sum(800 + i for i in range(32)) - 805 - 831 + 1234 + 4321
    page.wait_for_function(
        f"document.querySelector('[data-testid=fleet-totals]').textContent.startsWith('32 hosts · {total:,} tok/s')",
        timeout=3_000)
    page.evaluate("window.scrollTo(0, window.scrollY - window.innerHeight"
                  " + document.querySelector('[data-testid=fleet-table] tbody').getBoundingClientRect().bottom)")
    page.wait_for_function(f"!{last}.hidden && {last}.children[3].textContent === '4,321'", timeout=3_000)
    page.locator("[data-testid=fleet-row][data-host=node31]").click()
    page.wait_for_function("document.getElementById('host-picker').value === 'node31'", timeout=5_000)
    deadline = time.monotonic() + 5
    while not any("/api/stream?" in u and "samples_of=node31" in u for u in asked):
        assert time.monotonic() < deadline, "the stream was not reopened for the picked host"
        page.wait_for_timeout(100)
    wait_panels(page)  # the picked host's views drawn: nothing of the page is still asking


# When plotly.js's script is put in the page (its first run is one long task), how many fleet rows are there.
ROWS_WHEN_PLOTLY_RUNS = """
window.rowsWhenPlotlyRuns = null;
new MutationObserver((changes) => {
  for (const change of changes) for (const node of change.addedNodes) if (node.id === 'plotly-js') {
    window.rowsWhenPlotlyRuns = document.querySelectorAll('[data-testid=fleet-row]').length;
  }
}).observe(document, { subtree: true, childList: true });
"""
CHARTS_DRAWN = "document.getElementById('chart-throughput')?.querySelectorAll('.main-svg').length > 0"


def test_the_fleet_rows_are_drawn_before_plotly_runs_and_the_charts_follow(
    fleet: tuple[str, Services], page: Any
) -> None:
    url, _ = fleet
    page.add_init_script(ROWS_WHEN_PLOTLY_RUNS)
    outside = open_dashboard(page, url)
    page.wait_for_function(CHARTS_DRAWN, timeout=30_000)
    assert page.evaluate("window.rowsWhenPlotlyRuns") == 32
    fetched = page.evaluate("performance.getEntriesByType('resource').map((r) => r.name)"
                            ".filter((n) => n.endsWith('/vendor/plotly.min.js'))")
    assert len(fetched) == 1, fetched  # the preload's bytes run; not fetched a second time
    assert outside == []


def test_a_fleet_that_does_not_answer_does_not_hold_the_charts(fleet: tuple[str, Services], page: Any) -> None:
    url, _ = fleet
    held: list[Any] = []
    page.route("**/api/fleet", lambda route: held.append(route))
    page.add_init_script(ROWS_WHEN_PLOTLY_RUNS)
    started = time.monotonic()
    page.goto(url, wait_until="commit")
    page.wait_for_function(CHARTS_DRAWN, timeout=30_000)
    assert page.evaluate("window.rowsWhenPlotlyRuns") == 0
    # drawn while the fleet is held, after plotly.js waited its 3 s for the rows (the 30-s wait bounds it above)
    assert time.monotonic() - started >= 2.9, "plotly.js ran without waiting for the rows"
    assert held, "the page never asked for the fleet"
    for route in held:
        route.continue_()
    page.wait_for_function("document.querySelectorAll('[data-testid=fleet-row]').length === 32", timeout=30_000)


ROWS_IN_A_PAGE = """async () => {
  const { createFleetView } = await import('/static/fleet.js');
  const section = document.createElement('section');
  section.style.cssText = 'position: fixed; top: 0; left: 0; right: 0; z-index: 9999; background: white';
  document.body.append(section);  // in view: rows out of view are written only when they scroll in
  const frames = () => new Promise((resolve) => setTimeout(resolve, 300));
  const view = createFleetView(section, { onPick: () => {} });
  const row = (host) => ({ host, alerts: [], attention: 'ok', attention_reason: '', sources_at: {}, fresh_at: null });
  const seen = () => {
    const b = section.querySelector('[data-testid=fleet-row][data-host=b]');
    return [section.querySelector('[data-testid=fleet-row]').dataset.host, b.dataset.attention, b.innerText];
  };
  const steps = [];
  view.render({ hosts: [row('a'), row('b')], groups: [],
                totals: { hosts: 2, gen_throughput: 0, completions: null, target_completions: null, eta_s: null } });
  await frames();
  view.noteAlert({ host: 'b', rule: 'token_usage_high', state: 'firing' });
  steps.push(seen());
  // the server's row and order, read just before the alert was stored
  view.apply({ rows: [{ ...row('b'), attention_reason: '' }], order: ['a', 'b'] });
  await frames();
  steps.push(seen());
  // the alert's news: the server's row now shows it (confirmed), then it clears
  view.apply({ rows: [{ ...row('b'), alerts: [{ rule: 'token_usage_high', state: 'firing' }], attention: 'alert',
                        attention_reason: 'firing: token_usage_high' }], order: ['b', 'a'] });
  await frames();
  steps.push(seen());
  view.noteAlert({ host: 'b', rule: 'token_usage_high', state: 'resolved' });
  view.apply({ rows: [row('b')], order: ['a', 'b'] });
  await frames();
  steps.push(seen());
  return steps;
}"""


def test_a_row_read_before_its_alert_was_stored_does_not_unmark_it(fleet: tuple[str, Services], page: Any) -> None:
    """CI, 2026-12-07: the row was at the top and marked, then a `fleet` event made from the row read just
    before the alert was stored blanked its "needs" cell. The page keeps what the stream said fired until
    the server's rows show it (or it resolves)."""
    url, _ = fleet
    open_dashboard(page, url)
    marked, stale, confirmed, cleared = page.evaluate(ROWS_IN_A_PAGE)
    for step in (marked, stale, confirmed):
        assert step[:2] == ["b", "alert"] and "firing: token_usage_high" in step[2], step
    assert cleared[:2] == ["a", "ok"] and "firing" not in cleared[2], cleared
