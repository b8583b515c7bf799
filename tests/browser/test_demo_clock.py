"""The demo on one clock: every chart of the page shows each restart at the same instant.

The demo runs at speed 2 (the story's restarts at 60 s and 210 s of wall time): at speed 4 a
restart's quiet (drain and load, 6 s of story time) was 1.5 s of wall time, and on a loaded machine
the usage chart's prefill lines of the old and the new server left no gap to see. For each restart
the test reads, from the plotly graph divs themselves, the stretch where each of the six charts
shows the old server gone and the new one not yet working (no decode samples; GPU memory and
utilisation down; no completions), and checks that every chart's stretch holds the run marker and
that the charts agree on when the old server stopped, within a couple of sampling intervals.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.commands.demo import demo_config
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.simulator.demo import DEMO_LOAD_S, DRAIN_S, STORY, start_demo_world
from tests.fixtures.web import block_outside_requests, live_wait, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SPEED = 2.0
TOL_S = 3.0  # a couple of sampling intervals: GPUs every 1 s, decode lines ~2.6 s apart (demo.speed_flags)
AROUND_S = 8.0  # wall seconds before a run marker searched for the chart's restart
MIN_QUIET_S = 1.5  # longer than the GPU sampling interval (1 s)
# The longest a restart can keep a chart quiet: drain, process start, boot, the first decode line,
# the client's retry and the first short responses (wall seconds at SPEED).
MAX_QUIET_S = (DRAIN_S + DEMO_LOAD_S + 12.0) / SPEED + 12.0
# Completions resume only when the new server has finished its first responses (the shortest take
# ~100 simulated seconds under a restart's burst): up to ~50 s of wall time at speed 2.
RESUME_S = {"chart-completions": 70.0}
AFTER_S = 30.0  # wall seconds after a run marker searched for the chart's first working sample
CHARTS = ("chart-throughput", "chart-usage", "chart-requests", "chart-completions", "chart-gpu-util",
          "chart-gpu-mem")
READ = """(id) => { const el = document.getElementById(id); const tr = el.data[0];
  return { x: tr.x.map((x) => new Date(x).getTime() / 1000), y: tr.y,
           marks: (el.layout.shapes || []).filter((s) => s.name === 'marker-run')
                    .map((s) => new Date(s.x0).getTime() / 1000) }; }"""


@pytest.fixture
def demo_url(tmp_path: Path, serve_app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    world = start_demo_world(tmp_path, speed=SPEED)
    assert world.bin_dir is not None
    monkeypatch.setenv("PATH", f"{world.bin_dir}{os.pathsep}{os.environ['PATH']}")  # the simulated nvidia-smi
    services = build_services(demo_config(world, tmp_path))
    try:
        yield serve_app(create_app(services)).url
    finally:
        world.stop()


def active(chart: str, ys: list[float | None], top: float) -> list[bool]:
    """Which samples show a server at work: any decode sample; GPUs busy / memory held; a completion."""
    if chart == "chart-gpu-mem":
        return [y is not None and y >= 0.5 * top for y in ys]
    if chart == "chart-gpu-util":
        return [y is not None and y > 0 for y in ys]
    if chart == "chart-completions":  # the count went up since the last sample that had one
        out, last = [], None
        for y in ys:
            out.append(y is not None and last is not None and y > last)
            last = y if y is not None else last
        return out
    return [y is not None for y in ys]


def quiet_stretch(chart: str, xs: list[float], ys: list[float | None], mark: float) -> tuple[float, float]:
    """(last working sample before, first working sample after) the quiet stretch (at least MIN_QUIET_S,
    or samples showing the server down) nearest `mark`, within TOL_S of it; the longest of those that hold it."""
    top = max((y for y in ys if y is not None), default=0.0)
    near = [(x, on) for x, on in zip(xs, active(chart, ys, top), strict=True)
            if mark - AROUND_S <= x <= mark + RESUME_S.get(chart, AFTER_S)]
    working = [i for i, (_, on) in enumerate(near) if on]
    gaps = [(near[j][0] - near[i][0], near[i][0], near[j][0]) for i, j in itertools.pairwise(working)
            if (near[j][0] - near[i][0] >= MIN_QUIET_S or j > i + 1)  # long, or a sample shows it down
            and near[i][0] - TOL_S <= mark <= near[j][0] + TOL_S]
    shown = [(round(x - mark, 1), on) for x, on in near]
    assert gaps, f"{chart}: no quiet stretch at the restart at {mark:.1f}; samples around it: {shown}"
    # The stretch holding the restart, not the longest near it: under load the old server's own lines
    # can be seconds apart just before a restart whose quiet, at speed 2, may be shorter.
    _, _, before, after = min((max(0.0, before - mark, mark - after), -length, before, after)
                              for length, before, after in gaps)
    return before, after


def test_every_chart_shows_each_restart_at_the_same_instant(demo_url: str, page: Any) -> None:
    outside = block_outside_requests(page)
    page.set_viewport_size({"width": 1400, "height": 1200})
    page.goto(f"{demo_url}/?range=15m")
    wait_settled(page, timeout=30_000)
    second_restart = (STORY[0][1] or 0) + (STORY[1][1] or 0)
    started = time.monotonic()
    live_wait(page, second_restart / SPEED + RESUME_S['chart-completions'] - (time.monotonic() - started))
    page.wait_for_function("document.getElementById('chart-usage').markerCount >= 3", timeout=60_000)
    live_wait(page, 2)  # the page draws per animation frame: let the last samples land
    charts = {chart: page.evaluate(READ, chart) for chart in CHARTS}
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "demo-clock-charts.json").write_text(json.dumps(charts), encoding="utf-8")
    marks = sorted(charts["chart-usage"]["marks"])
    assert len(marks) >= 3
    for chart, read in charts.items():
        assert sorted(read["marks"]) == pytest.approx(marks), f"{chart}: run markers differ"
    for mark in marks[1:3]:
        stops: dict[str, float] = {}
        for chart, read in charts.items():
            before, after = quiet_stretch(chart, read["x"], read["y"], mark)
            print(f"restart at {mark:.1f}: {chart} quiet from {before - mark:+.1f} s to {after - mark:+.1f} s")
            assert before - TOL_S <= mark <= after + TOL_S, (chart, before - mark, after - mark)
            assert after - before <= RESUME_S.get(chart, MAX_QUIET_S), (chart, after - before)
            stops[chart] = before
        spread = max(stops.values()) - min(stops.values())
        print(f"restart at {mark:.1f}: the old server stops within {spread:.1f} s on all six charts")
        near = {chart: [round(x - mark, 1) for x in read["x"] if abs(x - mark) <= AROUND_S]
                for chart, read in charts.items()}
        assert spread <= 2 * TOL_S, (stops, near)
    assert outside == []
    page.screenshot(path=str(ARTIFACTS / "demo-clock.png"), full_page=True, timeout=90_000)
