"""One tab left open across restarts shows what a freshly loaded tab shows: runs, run markers, the
compare table, alerts and every chart point, after each restart (issue #30). And two samples stamped
in the same second are two points on the open tab's chart, as in the store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.browser.world import ScriptedRun
from tests.fixtures.web import open_dashboard, wait_panels

pytestmark = pytest.mark.browser
RESTARTS = 3
# The page fetches its host views again at most every 10 s while samples arrive (static/app.js's
# VIEWS_EVERY_MS): the open tab must match a fresh one within that and the fetches it makes.
CONVERGE_S = 25.0

# What a tab shows, read from its DOM and plotly's graph divs.
SNAPSHOT = """() => {
  const charts = [...document.querySelectorAll('.chart.js-plotly-plot')].map((div) => ({
    id: div.id,
    traces: (div.data || []).map((trace) => ({
      name: trace.name,
      // a gap's break (a null where a line pauses) is no sample: where between two points it sits is not compared
      points: trace.x.map((x, i) => [trace.y[i] === null ? 'gap' : new Date(x).getTime(), trace.y[i]]),
    })),
    markers: (div.layout.shapes || []).filter((s) => s.name && s.name.startsWith('marker-'))
      .map((s) => [s.name, new Date(s.x0).getTime()]),
    labels: (div.layout.annotations || []).map((a) => a.text),
  }));
  const compare = document.getElementById('compare-view');
  return {
    charts,
    markerCount: document.getElementById('marker-count').textContent,
    runs: [...compare.querySelectorAll('[data-testid=cmp-runs] label')].map((l) => l.textContent),
    chosen: [...compare.querySelectorAll('[data-testid=cmp-runs] input:checked')].map((i) => i.value),
    table: compare.querySelector('[data-testid=cmp-table]')?.innerText ?? null,
    flags: compare.querySelector('[data-testid=cmp-flags]')?.innerText ?? null,
    alerts: [...document.querySelectorAll('[data-testid=alert-entry]')].map((e) => [
      e.dataset.rule, e.querySelector('.alert-host')?.textContent,
      e.querySelector('[data-testid=alert-since]')?.dataset.since, e.dataset.state ?? e.className]),
  };
}"""


@pytest.fixture
def live_run(tmp_path: Path, serve_app: Any) -> Iterator[tuple[ScriptedRun, str]]:
    run = ScriptedRun(tmp_path, history_s=60)
    services = build_services(run.config())
    for collector in services.collectors.values():
        collector.interval = 0.1
    server = serve_app(create_app(services))
    run.start()
    yield run, server.url
    run.stop()


def open_tab(page: Any, url: str) -> None:
    open_dashboard(page, url)
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=15_000)
    wait_panels(page)


def stored_until_quiet(url: str, metric: str = "gen_throughput") -> list[list[float]]:
    """The host's stored series once it stopped growing (the world paused, the collector caught up)."""
    before: list[list[float]] | None = None
    for _ in range(50):
        points = httpx.get(f"{url}/api/series", params={"host": "gpu1", "metric": metric}).json()["points"]
        if points == before:
            return points
        before = points
        time.sleep(0.5)
    raise AssertionError("the stored series kept growing with the world paused")


def differences(open_view: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    out = []
    for key in ("markerCount", "runs", "chosen", "table", "flags", "alerts"):
        if open_view[key] != fresh[key]:
            out.append(f"{key}: open {open_view[key]!r} != fresh {fresh[key]!r}")
    for a, b in zip(open_view["charts"], fresh["charts"], strict=True):
        for part in ("markers", "labels"):
            if a[part] != b[part]:
                out.append(f"{a['id']} {part}: open {a[part]} != fresh {b[part]}")
        for ta, tb in zip(a["traces"], b["traces"], strict=True):
            if ta["points"] != tb["points"]:
                only_open = [p for p in ta["points"] if p not in tb["points"]]
                only_fresh = [p for p in tb["points"] if p not in ta["points"]]
                out.append(f"{a['id']} {ta['name']}: open {len(ta['points'])} points, fresh {len(tb['points'])}; "
                           f"only open: {only_open[:5]}, only fresh: {only_fresh[:5]}; "
                           f"open {[p for i, p in enumerate(ta['points']) if p in ta['points'][:i]]} repeated; "
                           f"open {ta['points']}, fresh {tb['points']}")
    return out


def test_a_tab_open_across_restarts_shows_what_a_fresh_load_shows(
    live_run: tuple[ScriptedRun, str], page: Any, context: Any
) -> None:
    run, url = live_run
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    open_tab(page, url)
    for restart in range(1, RESTARTS + 1):
        run.restart()
        page.wait_for_timeout(6_000)  # the new run decodes for a while, the open tab following live
        run.pause()
        stored_until_quiet(url)
        fresh = context.new_page()
        open_tab(fresh, url)
        wanted = fresh.evaluate(SNAPSHOT)
        fresh.close()
        assert len(wanted["runs"]) == restart + 1, wanted["runs"]
        assert "no decode samples" not in (wanted["table"] or "")
        deadline = time.monotonic() + CONVERGE_S
        while (left := differences(page.evaluate(SNAPSHOT), wanted)) and time.monotonic() < deadline:
            page.wait_for_timeout(500)
        assert left == [], f"after restart {restart}: " + "\n".join(left)
        run.resume()
    assert errors == []


def test_two_lines_stamped_in_one_second_are_two_points_on_the_open_chart(
    live_run: tuple[ScriptedRun, str], page: Any
) -> None:
    run, url = live_run
    open_tab(page, url)
    run.pause()
    stored_until_quiet(url)
    page.wait_for_timeout(1_100)  # past the second of the world's last line
    second = float(int(time.time()))
    at = f"document.getElementById('chart-throughput').data[0].x.filter(x => new Date(x).getTime() === {second * 1000})"
    run.log_decode(second, 0, 1500.0)
    page.wait_for_function(f"{at}.length === 1", timeout=10_000)  # drawn: the chart ends at this second
    run.log_decode(second, 0, 1700.0)  # the same rank again in the same second: a fast decode
    stored = stored_until_quiet(url)
    at_second = [v for t, v in stored if t == second]
    assert len(at_second) == 2, stored[-4:]  # the store keeps both: two host points stamped alike
    page.wait_for_function(f"{at}.length >= 2", timeout=10_000)
    drawn = page.evaluate(
        f"(() => {{ const t = document.getElementById('chart-throughput').data[0];"
        f" return t.x.map((x, i) => [new Date(x).getTime(), t.y[i]]).filter(([x]) => x === {second * 1000})"
        f".map(([, y]) => y); }})()")
    assert drawn == at_second


RATE_TRACE = "document.getElementById('chart-completions').data.find((t) => t.name.startsWith('per second'))"


def test_rate_points_drawn_before_their_run_start_was_read_are_drawn_again(
    live_run: tuple[ScriptedRun, str], page: Any, context: Any
) -> None:
    """An output file's lines can be stored before the server log's line that starts their run (two
    sources, two reads): the completion rate drawn meanwhile reached back into the old run. Once the
    start is read, the open tab draws what a fresh load draws."""
    run, url = live_run
    open_tab(page, url)
    run.pause()
    stored_until_quiet(url)
    start = float(int(time.time())) + 1.0
    page.wait_for_timeout(int((start - time.time()) * 1000) + 100)
    for _ in range(8):  # outputs only: the server log says nothing of the new run yet
        run.complete()
        page.wait_for_timeout(500)
    after = (f"(() => {{ const t = {RATE_TRACE};"
             f" return t.x.filter((x) => new Date(x).getTime() >= {start * 1000}).length; }})()")
    page.wait_for_function(f"{after} >= 3", timeout=15_000)  # drawn as if the old run went on
    run.ready_at(start)  # the run's start, read last
    deadline = time.monotonic() + 15
    while len(httpx.get(f"{url}/api/runs", params={"host": "gpu1"}).json()) < 2 and time.monotonic() < deadline:
        time.sleep(0.25)
    stored_until_quiet(url, "completions")
    fresh = context.new_page()
    open_tab(fresh, url)
    wanted = fresh.evaluate(SNAPSHOT)
    fresh.close()
    deadline = time.monotonic() + CONVERGE_S
    while (left := differences(page.evaluate(SNAPSHOT), wanted)) and time.monotonic() < deadline:
        page.wait_for_timeout(500)
    assert left == [], "\n".join(left)
