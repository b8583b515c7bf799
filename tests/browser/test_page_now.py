"""The page as a person uses it (issue #18): the row of current values equals the host's status
answer, a link restores host and time range, lines break at gaps, an empty chart keeps a date axis when
zoomed, nothing overflows a phone's width, and a restart always says which run its diff was made on."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.app.services import Services
from tests.app.slice_helpers import append_lines, wait_until
from tests.browser.world import ScriptedRun
from tests.controller.support import free_port, host_table
from tests.fixtures.web import open_dashboard, wait_panels, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TOKEN = "now-t0ken"
X_RANGE = "(id) => document.getElementById(id).layout.xaxis.range.map((x) => new Date(x).getTime() / 1000)"


def two_hosts(tmp: Path) -> Services:
    hosts = tuple(HostConfig(name=name, ssh="local", server_log=str(tmp / f"{name}.log"),
                             outputs=(str(tmp / name / "*" / "raw_responses.jsonl"),))
                  for name in ("local", "other"))
    services = build_services(Config(server=ServerConfig(data_dir=str(tmp), database="kvwatch.db"), hosts=hosts))
    for collector in services.collectors.values():
        collector.interval = 0.05
    return services


@pytest.fixture
def still(tmp_path: Path, serve_app: Any) -> tuple[Services, str]:
    """Two hosts with stored history and no new lines: "local" has a ten-minute hole in its log."""
    append_lines(tmp_path / "local.log", 1, 120)
    append_lines(tmp_path / "local.log", 720, 120)  # 12:02:00 .. 12:11:59 missing
    append_lines(tmp_path / "other.log", 1, 90)
    outputs = tmp_path / "local" / "synth" / "raw_responses.jsonl"
    outputs.parent.mkdir(parents=True)
    outputs.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(42)))
    services = two_hosts(tmp_path)
    server = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("local", "gen_throughput")[0]) == 240
               and len(services.store.series("other", "gen_throughput")[0]) == 90, timeout=30)
    wait_until(lambda: services.store.latest("local", "completions") is not None, timeout=30)
    return services, server.url


def open_page(page: Any, url: str, width: int = 1400, height: int = 1000) -> list[str]:
    return open_dashboard(page, url, width, height)


def cell(page: Any, name: str) -> str:
    return page.locator(f"[data-testid=now-row] [data-testid={name}] .now-value").inner_text()


def number(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_now_row_shows_the_status_answer_without_hover(still: tuple[Services, str], page: Any) -> None:
    _, url = still
    outside = open_page(page, url)
    status = httpx.get(f"{url}/api/hosts/local/status").json()
    assert status["gen_throughput"] is not None and status["completions"] == 42
    page.wait_for_function("document.querySelector('[data-testid=now-gen] .now-value').textContent !== '—'")
    assert number(cell(page, "now-gen")) == round(status["gen_throughput"])
    assert number(cell(page, "now-gen-mean")) == round(status["gen_throughput_mean_5min"])
    assert number(cell(page, "now-usage")) == pytest.approx(status["token_usage"], abs=0.0005)
    assert number(cell(page, "now-running")) == status["running_req"]
    assert number(cell(page, "now-queue")) == status["queue_req"]
    rate = status["completion_rate"]
    assert cell(page, "now-rate") == ("—" if rate is None else f"{rate:.2f}")
    assert cell(page, "now-alerts") == (" · ".join(f"{a['state']}: {a['rule']}" for a in status["alerts"]) or "none")
    # The mouse never went near a chart: no hover label is what showed these.
    assert page.locator(".hoverlayer .hovertext").count() == 0
    # Another host: the row is that host's.
    page.locator("[data-testid=host-picker]").select_option("other")
    other = httpx.get(f"{url}/api/hosts/other/status").json()
    page.wait_for_function(f"document.querySelector('[data-testid=now-running] .now-value').textContent"
                           f" === '{int(other['running_req'])}'")
    assert number(cell(page, "now-gen")) == round(other["gen_throughput"])
    assert outside == []


def test_a_link_restores_host_and_range_and_a_range_button_writes_it(
        still: tuple[Services, str], page: Any) -> None:
    services, url = still
    open_page(page, f"{url}/?host=other&range=15m")
    assert page.locator("[data-testid=host-picker]").input_value() == "other"
    assert page.locator("[data-testid=range-15m]").get_attribute("aria-pressed") == "true"
    newest = services.store.latest("other", "gen_throughput")[0]
    page.wait_for_function("document.getElementById('chart-throughput').layout?.xaxis?.range")
    start, end = page.evaluate(X_RANGE, "chart-throughput")
    assert end - start == pytest.approx(900, abs=1)
    assert end == pytest.approx(newest, abs=1)  # the data stopped before "now": the window ends at it
    # Every chart, the empty GPU ones included, shows the same window on a date axis.
    page.wait_for_function("document.getElementById('chart-gpu-util').layout.xaxis.type === 'date'")
    assert page.evaluate(X_RANGE, "chart-gpu-util") == pytest.approx([start, end], abs=1)
    # A button: the URL follows, and a reload of that URL restores it.
    page.locator("[data-testid=range-1h]").click()
    page.wait_for_function("location.search.includes('range=1h')")
    assert "host=other" in page.url
    page.reload()
    wait_settled(page, timeout=30_000)
    assert page.locator("[data-testid=host-picker]").input_value() == "other"
    assert page.locator("[data-testid=range-1h]").get_attribute("aria-pressed") == "true"
    page.wait_for_function(f"(({X_RANGE})('chart-throughput')).reduce((a, b) => b - a) > 3590")
    # A fixed window as the alert links build it (?host=&from=&to=, epoch or ISO): paused on that window.
    first = services.store.series("local", "gen_throughput")[0][0]
    iso = dt.datetime.fromtimestamp(first + 60, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    page.goto(f"{url}/?host=local&from={int(first)}&to={iso}")
    wait_settled(page, timeout=30_000)
    assert page.locator("[data-testid=host-picker]").input_value() == "local"
    assert page.locator("[data-testid=live-badge]").inner_text() == "paused (zoomed)"
    assert page.evaluate(X_RANGE, "chart-usage") == pytest.approx([int(first), first + 60], abs=1)


def test_lines_break_at_gaps_and_an_empty_chart_keeps_its_date_axis_on_zoom(
        still: tuple[Services, str], page: Any) -> None:
    services, url = still
    open_page(page, f"{url}/?host=local")
    page.wait_for_function("document.getElementById('chart-throughput').data[0].x.length >= 240")
    trace = page.evaluate("(() => { const t = document.getElementById('chart-throughput').data[0];"
                          " return {y: t.y, x: t.x.map((x) => new Date(x).getTime() / 1000),"
                          " gaps: t.connectgaps}; })()")
    assert trace["gaps"] is False
    nulls = [i for i, v in enumerate(trace["y"]) if v is None]
    assert len(nulls) == 1, nulls  # one hole in the log, one break in the line
    hole = nulls[0]
    assert trace["x"][hole + 1] - trace["x"][hole - 1] == pytest.approx(600, abs=1)
    assert len(services.store.series("local", "gen_throughput")[0]) == 240  # nothing was invented
    # Drag a window on the GPU chart, which has no points at all.
    page.locator("#chart-gpu-util").scroll_into_view_if_needed()
    box = page.locator("#chart-gpu-util .nsewdrag").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)
    page.mouse.up()
    page.wait_for_function("document.getElementById('live-badge').textContent === 'paused (zoomed)'")
    axis = page.evaluate("document.getElementById('chart-gpu-util').layout.xaxis")
    assert axis["type"] == "date", axis
    start, end = page.evaluate(X_RANGE, "chart-gpu-util")
    first = services.store.series("local", "gen_throughput")[0][0]
    assert first - 60 < start < end < time.time() + 60, (start, end)  # on the data's dates, not plotly's -1..6
    assert page.evaluate(X_RANGE, "chart-throughput") == pytest.approx([start, end], abs=1)  # all charts follow
    assert "from=" in page.url and "to=" in page.url
    # A double-click on the empty chart goes back to live, on the date axis still.
    page.locator("#chart-gpu-util .nsewdrag").dblclick()
    page.wait_for_function("document.getElementById('live-badge').textContent === 'following live'")
    page.wait_for_function("document.getElementById('chart-gpu-util').layout.xaxis.type === 'date'")
    start, end = page.evaluate(X_RANGE, "chart-gpu-util")
    assert start > 1.7e9 and end > start, (start, end)
    assert "from=" not in page.url


def test_a_refill_of_an_empty_chart_keeps_its_date_axis(still: tuple[Services, str], page: Any) -> None:
    """A refill (a host picked, a window fetched) sets every trace's points again. Plotly forgets an
    axis type when x is restyled, and on a chart with no points it then guesses "linear": a zoom made
    right after the refill, before the next live range, came back as -1..6 (a CI failure, 2026-12-06)."""
    _, url = still
    open_page(page, f"{url}/?host=local")
    page.wait_for_function("document.getElementById('chart-gpu-util').layout.xaxis.type === 'date'")
    kept = page.evaluate("""async () => {
        const charts = await import("/static/charts.js");
        const chart = document.getElementById("chart-gpu-util");
        charts.setTraces(chart, chart.data.map(() => []), chart.data.map((_, i) => i));
        const typed = [chart.layout.xaxis.type, chart._fullLayout.xaxis.type];
        // a zoom's refill: the window set on the axis stays, the points are the window's
        charts.setXRange(chart, [1767225600, 1767229200]);
        charts.setTraces(chart, chart.data.map(() => [[1767227400, 50]]), chart.data.map((_, i) => i));
        const range = chart.layout.xaxis.range.map((x) => new Date(x).getTime() / 1000);
        return [...typed, range, chart.layout.xaxis.autorange];
    }""")
    assert kept == ["date", "date", [1767225600, 1767229200], False]


# The completion rate of a CI failure (2026-12-07): the open tab had learnt its gap limit from its first
# points (further apart) and drew 796.1 -> 801.7 unbroken; a fresh tab broke it.
RATE_TIMES = [794.481, 795.630, 796.099, 801.715, 802.243, 802.754, 803.863, 804.429, 804.979, 805.508,
              806.033, 806.557, 807.237, 808.089, 808.880, 809.500, 810.166]


def test_a_trace_drawn_point_by_point_breaks_where_one_loaded_at_once_does(
        still: tuple[Services, str], page: Any) -> None:
    _, url = still
    open_page(page, f"{url}/?host=local")
    drawn = page.evaluate("""async (times) => {
        const gaps = await import("/static/gaps.js");
        const toX = (points) => points.map(([t]) => new Date(t * 1000));
        const points = times.map((t, i) => [1796602000 + t, i]);
        const fresh = { data: [{ x: [], y: [] }] };
        const whole = gaps.gapped(fresh, 0, points);
        fresh.data[0] = { x: toX(whole), y: whole.map(([, v]) => v) };
        const open = { data: [{ x: [], y: [] }] };
        const first = gaps.gapped(open, 0, [[1796601990, -1], [1796601997, -2]]);  // its own start, sparser
        open.data[0] = { x: toX(first), y: first.map(([, v]) => v) };
        gaps.dropFirst(open, 0, 2);  // the window moved past them
        for (const point of points) gaps.appendGapped(open, 0, [point], toX);
        const shown = (e) => e.data[0].y.map((v, i) => [e.data[0].x[i].getTime(), v]);
        return [shown(open), shown(fresh), open.gapLimits[0], fresh.gapLimits[0]];
    }""", RATE_TIMES)
    open_tab, fresh_tab, open_limit, fresh_limit = drawn
    assert open_limit == fresh_limit == 5
    assert [v for _, v in fresh_tab].count(None) == 1  # 796.1 -> 801.7 is more than 5 s
    assert open_tab == fresh_tab


def test_no_horizontal_overflow_on_a_phone(still: tuple[Services, str], page: Any) -> None:
    _, url = still
    open_page(page, f"{url}/?host=local&range=1h", width=390, height=844)
    wait_panels(page)
    page.wait_for_function("document.querySelector('[data-testid=now-gen] .now-value').textContent !== '—'")
    time.sleep(1)  # the charts' responsive resize
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "phone-390.png"), full_page=True)


@pytest.fixture
def controlled(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Services, str]]:
    monkeypatch.delenv("KVWATCH_TOKEN", raising=False)
    table = host_table(tmp_path, free_port())
    (tmp_path / "logs").mkdir()
    host = HostConfig(name="gpu1", ssh="local", server_log=table["server_log"], launch=table["launch"],
                      **{key: table[key] for key in ("presets", "vetoes", "restart")})
    config = Config(server=ServerConfig(data_dir=str(tmp_path), database="kvwatch.db", token=TOKEN), hosts=(host,))
    services = build_services(config)
    server = serve_app(create_app(services))
    yield services, server.url
    controller = services.controllers["gpu1"]
    controller.wait(60)
    controller.remote.stop(5)


def test_a_restart_sends_the_run_its_diff_was_made_on_and_shows_a_409_plainly(
        controlled: tuple[Services, str], page: Any) -> None:
    services, url = controlled
    open_page(page, url)
    wait_panels(page)
    page.locator("#ctl-token").fill(TOKEN)
    # A first, real restart: afterwards the server runs a run the controller knows by id.
    page.locator("[data-testid=preset-bf16-hicache-088]").check()
    page.locator("#ctl-review").click()
    page.locator("#ctl-go").click()
    page.wait_for_function("document.getElementById('ctl-progress').dataset.done === 'true'", timeout=90_000)
    first = services.controllers["gpu1"].last
    assert first is not None and first.outcome == "ok"
    # The next restart: the page asks for the server's flags again right before it shows the diff,
    # and the POST names the run that diff was made against. The answer is the server's 409 for a stale tab.
    bodies: list[dict[str, Any]] = []
    stale = f"run {first.run_id} is no longer the current run of gpu1 (now: r-other)"

    def intercept(route: Any) -> None:
        if route.request.method != "POST":
            route.continue_()
            return
        bodies.append(json.loads(route.request.post_data))
        route.fulfill(status=409, content_type="application/json", body=json.dumps({"detail": stale}))

    page.route(re.compile(r".*/api/hosts/gpu1/restart$"), intercept)
    page.locator("[data-testid=preset-none]").check()
    # (a tuning flag: a guarded one such as --model-path is now refused in the editor, before confirming)
    page.locator("[data-testid=flag-input-mem-fraction-static]").fill("0.8")
    with page.expect_request(lambda request: request.url.endswith("/api/hosts/gpu1/controller")):
        page.locator("#ctl-review").click()  # the server's flags are fetched again on review
    page.wait_for_selector("#ctl-confirm:not([hidden])")
    page.wait_for_function("!document.getElementById('ctl-go').disabled")
    assert "--mem-fraction-static 0.88 → 0.8" in page.locator("#ctl-diff").inner_text()
    page.locator("#ctl-go").click()
    page.wait_for_function("document.getElementById('ctl-error').textContent.startsWith('409')")
    assert len(bodies) == 1
    assert bodies[0]["expected_run"] == first.run_id
    assert bodies[0]["flags"]["mem-fraction-static"] == 0.8
    assert stale in page.locator("#ctl-error").inner_text()
    assert services.controllers["gpu1"].last is first  # nothing ran


@pytest.fixture
def live_run(tmp_path: Path, serve_app: Any) -> Iterator[tuple[ScriptedRun, str]]:
    run = ScriptedRun(tmp_path)
    services = build_services(run.config())
    for collector in services.collectors.values():
        collector.interval = 0.1
    server = serve_app(create_app(services))
    run.start()
    yield run, server.url
    run.stop()


def test_everything_follows_the_stream_and_a_range_rolls_with_now(
        live_run: tuple[ScriptedRun, str], page: Any) -> None:
    run, url = live_run
    outside = open_page(page, f"{url}/?range=15m")
    page.wait_for_function("document.getElementById('stream-state').textContent === 'live'", timeout=10_000)
    # The run list of the compare view, loaded once at first; the alert state in the row and the banner.
    page.wait_for_function("document.querySelectorAll('#cmp-runs input').length === 1", timeout=15_000)
    page.wait_for_function("document.querySelector('[data-testid=now-alerts] .now-value').textContent"
                           ".includes('firing: token_usage_high')", timeout=30_000)
    assert not page.locator("#alert-banner").is_hidden()
    # A rolling window: 15 minutes ending now, moving with the samples.
    start, end = page.evaluate(X_RANGE, "chart-usage")
    assert end - start == pytest.approx(900, abs=1) and end == pytest.approx(time.time(), abs=5)
    page.wait_for_function(f"(({X_RANGE})('chart-usage'))[1] > {end + 2}", timeout=10_000)
    start, end = page.evaluate(X_RANGE, "chart-usage")
    assert end - start == pytest.approx(900, abs=1)
    # The row's numbers move with the stream: the running count is the newest sample's.
    page.wait_for_function("document.querySelector('[data-testid=now-running] .now-value').textContent === '121'",
                           timeout=10_000)  # 60 + 61 over the two DP ranks
    # A new server start: the compare view's run list follows without a reload.
    run.restart()
    page.wait_for_function("document.querySelectorAll('#cmp-runs input').length === 2", timeout=20_000)
    runs = httpx.get(f"{url}/api/runs", params={"host": "gpu1"}).json()
    shown = page.locator("#cmp-runs input").evaluate_all("(inputs) => inputs.map((i) => i.value)")
    assert shown == [r["id"] for r in runs]
    page.wait_for_function(f"document.querySelector('[data-testid=now-flags]').title === 'run {runs[-1]['id']}'",
                           timeout=15_000)
    assert outside == []
