"""The page draws the charts the catalog declares (app/metrics_catalog/charts.py through /api/catalog),
in Chromium: a section per chart in the table's order, its title, a trace per declared metric with its
legend name (plus what the host series combines), a thin line per GPU on a per-GPU chart, the right
axis and the hidden-until-clicked traces. With a grown table (a metric added to a chart, a new chart)
the page draws that too, with no change to static/."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.main import create_app
from kvwatch.app.metrics_catalog import page_charts
from kvwatch.app.runner import build_services
from kvwatch.app.store.base import Batch, Sample
from tests.browser.world import ScriptedRun
from tests.catalog.grown_charts import NEW_CHART, grow_charts
from tests.fixtures.web import open_dashboard

pytestmark = pytest.mark.browser
GPUS = 4
DRAWN = """() => [...document.querySelectorAll('#charts > section')].map((s) => ({
  id: s.id, title: s.layout.title.text, names: s.data.map((d) => d.name), axes: s.data.map((d) => d.yaxis),
  visible: s.data.map((d) => d.visible), widths: s.data.map((d) => d.line.width),
  threshold: s.layout.shapes.filter((x) => x.name === 'threshold').map((x) => x.y0),
  yrange: s.layout.yaxis.autorange === false ? s.layout.yaxis.range : null,
}))"""


def commit_gpus(services: Any) -> None:
    """What the GPU collector commits for GPUS GPUs: each GPU's samples and the host series over them."""
    samples = []
    for t in range(int(time.time()) - 60, int(time.time()), 5):
        for metric, value in (("gpu_util_pct", 80.0), ("gpu_mem_used_mib", 60_000.0), ("gpu_temp_c", 65.0)):
            samples += [Sample(metric, f"GPU{gpu}", t, value + gpu) for gpu in range(GPUS)]
            samples.append(Sample(metric, "", t, value + GPUS - 1))
        samples += [Sample(f"{metric}_max", "", t, value + GPUS - 1) for metric, value in
                    (("gpu_util_pct", 80.0), ("gpu_temp_c", 65.0))]
    services.store.commit(Batch("gpu1", "gpu", "nvidia-smi", samples))


@pytest.fixture
def serve(tmp_path: Path, serve_app: Any) -> Any:
    def start() -> str:
        run = ScriptedRun(tmp_path)  # its five minutes of history; not started, nothing is appended
        services = build_services(run.config())
        commit_gpus(services)
        return str(serve_app(create_app(services)).url)
    return start


def check_drawn(page: Any, declared: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    drawn = page.evaluate(DRAWN)
    assert [chart["id"] for chart in drawn] == [chart["id"] for chart in declared]
    for chart, shown in zip(declared, drawn, strict=True):
        traces = chart["traces"]
        parts = [f"GPU{gpu}" for gpu in range(GPUS)] if chart["per_gpu"] else []
        assert shown["title"] == chart["title"]
        assert len(shown["names"]) == len(traces) + len(parts), shown
        for trace, name in zip(traces, shown["names"], strict=False):  # plus "(sum over 2 DP ranks)" with data
            assert name == trace["name"] or name.startswith(f"{trace['name']} ("), (name, trace)
        assert shown["names"][len(traces):] == parts and shown["widths"][len(traces):] == [1] * len(parts)
        assert shown["axes"][:len(traces)] == [trace["axis"] for trace in traces]
        assert shown["visible"][:len(traces)] == ["legendonly" if t["hidden"] else True for t in traces]
        assert shown["threshold"] == ([chart["threshold"]] if chart["threshold"] is not None else [])
        assert shown["yrange"] == chart["y_range"]
    return {chart["id"]: chart for chart in drawn}


def test_the_page_draws_the_charts_the_catalog_declares(serve: Any, page: Any) -> None:
    outside = open_dashboard(page, serve())
    drawn = check_drawn(page, page_charts())
    assert len(drawn) == 6
    assert drawn["chart-gpu-util"]["names"][:2] == ["util % (mean of 4 GPUs)", "hottest GPU (max of 4 GPUs)"]
    assert outside == []


def test_a_grown_table_is_drawn_with_no_change_to_the_page(serve: Any, page: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    grow_charts(monkeypatch)  # the app is served from this process: it answers with the grown table
    outside = open_dashboard(page, serve())
    drawn = check_drawn(page, page_charts())
    assert list(drawn)[-1] == NEW_CHART.id
    assert drawn[NEW_CHART.id]["names"] == ["GPU temperature (mean of 4 GPUs)", "hottest GPU (max of 4 GPUs)",
                                            *[f"GPU{gpu}" for gpu in range(GPUS)]]
    assert drawn["chart-requests"]["names"][2].startswith("swapped")
    assert outside == []


def test_a_count_sampled_on_change_is_drawn_as_steps_and_never_broken(tmp_path: Path, serve_app: Any,
                                                                      page: Any) -> None:
    """The catalog says completions are sampled on change (an output file's line count): a restart's
    two quiet minutes are a flat step on the "done" line, not a hole; a log series still breaks."""
    run = ScriptedRun(tmp_path)
    services = build_services(run.config())
    start = int(time.time()) - 3000
    counts = [(start + s, float(s)) for s in range(0, 300, 2)]  # a completion every 2 s ...
    counts += [(start + 420 + s, float(300 + s)) for s in range(0, 300, 2)]  # ... none for 120 s, then again
    services.store.commit(Batch("gpu1", "outputs", "/prepared/old/raw_responses.jsonl",
                                [Sample("completions", "", t, v) for t, v in counts]))
    throughput = [Sample("gen_throughput", "", t, 900.0) for t, _ in counts]
    services.store.commit(Batch("gpu1", "server_log", "/logs/old.log", throughput))
    outside = open_dashboard(page, str(serve_app(create_app(services)).url))
    read = """(id) => { const t = document.getElementById(id).data[0];
      return { x: t.x.map((x) => new Date(x).getTime() / 1000), y: t.y, shape: t.line.shape || 'linear' }; }"""
    page.wait_for_function(f"document.getElementById('chart-completions').data[0].x.some((x) => "
                           f"new Date(x).getTime() / 1000 === {start + 420})")
    done, tok = page.evaluate(read, "chart-completions"), page.evaluate(read, "chart-throughput")
    assert done["shape"] == "hv" and tok["shape"] == "linear"
    quiet = [y for x, y in zip(done["x"], done["y"], strict=True) if start + 298 <= x <= start + 420]
    assert quiet == [298.0, 300.0], quiet  # the step: the last count before, the first after, no null
    assert None not in done["y"]
    hole = [x for x, y in zip(tok["x"], tok["y"], strict=True) if y is None and start < x < start + 420]
    assert len(hole) == 1, hole  # the log series breaks where its source was silent
    assert outside == []


def test_a_gpu_fault_is_a_failure_marker_with_its_message(tmp_path: Path, serve_app: Any, page: Any) -> None:
    """nvidia-smi's `[GPU requires reset]` is an `error` event (parsers/nvidia_smi.py); the page marks
    it on the charts like a crash, its message in the label's hover text (as text, not markup)."""
    from kvwatch.app.bus import EventBus
    from kvwatch.app.pipeline.sink import StoreSink
    from kvwatch.collectors.base import Line

    run = ScriptedRun(tmp_path)
    services = build_services(run.config())
    stamp = time.strftime("%Y/%m/%d %H:%M:%S.000", time.gmtime(time.time() - 60))
    fault = f"{stamp}, 1, " + ", ".join(["[GPU requires reset]"] * 5)
    StoreSink("gpu1", services.store, EventBus(), timezone="UTC").deliver(
        "gpu1", "gpu", "nvidia-smi", [Line("gpu", 1, 100, 1, fault)], None)
    outside = open_dashboard(page, str(serve_app(create_app(services)).url))
    page.wait_for_function("(document.getElementById('chart-gpu-util').layout.annotations || [])"
                           ".some((a) => a.name === 'label-failure')", timeout=15_000)
    labels = page.evaluate("document.getElementById('chart-gpu-util').layout.annotations"
                           ".filter((a) => a.name === 'label-failure').map((a) => [a.text, a.hovertext])")
    assert labels == [["error", "error<br>GPU 1: GPU requires reset"]], labels
    assert outside == []
