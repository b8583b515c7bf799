"""Reading the charts (issue #18) in Chromium: run markers close together keep short labels that do not
overlap (full flags on hover, a flag's value shown as text), gen tok/s stays readable beside prefill's
input spikes, and the GPU charts draw a line per GPU named from the catalog.

The host's server log (runs, decode and prefill lines) goes through the real pipeline; its GPU
samples, which would need nvidia-smi, are committed to the same store as the GPU collector commits them.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from kvwatch.app.services import Services
from kvwatch.app.store.base import Batch, Sample
from tests.app.slice_helpers import wait_until
from tests.compare.synth import server_args_text
from tests.fixtures.web import open_dashboard

pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
HISTORY_S = 480
RUNS = [  # (seconds after the history's start, flags)
    (0, {"mem_fraction_static": 0.88, "chunked_prefill_size": 8192, "kv_cache_dtype": "auto"}),
    (60, {"mem_fraction_static": 0.85, "chunked_prefill_size": 8192, "kv_cache_dtype": "auto"}),
    (100, {"mem_fraction_static": 0.9, "chunked_prefill_size": 4096, "kv_cache_dtype": "fp8_e5m2"}),
    (140, {"mem_fraction_static": 0.9, "chunked_prefill_size": 4096, "kv_cache_dtype": "fp8_e5m2",
           "served_model_name": "<b>kimi</b>"}),
]
GPUS = 8
BOXES = """(selector) => [...document.querySelectorAll(selector)].map((e) => {
    const r = e.getBoundingClientRect();
    return {x: r.x, y: r.y, w: r.width, h: r.height, text: e.textContent};
})"""


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def server_log(start: float) -> str:
    lines = []
    starts = {start + offset: flags for offset, flags in RUNS}
    for second in range(HISTORY_S):
        t = start + second
        if t in starts:
            lines.append(f"[{stamp(t)}] {server_args_text(starts[t])}")
            lines.append(f"[{stamp(t)}] The server is fired up and ready to roll!")
        if second % 2 == 0:
            gen = 1000 + 80 * ((second // 2) % 5)
            lines.append(f"[{stamp(t)} TP0] Decode batch, #running-req: 60, #token: 150000, token usage: 0.80, "
                         f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: 5")
        if second % 10 == 5:
            spike = 48000 if second % 30 == 5 else 2500
            lines.append(f"[{stamp(t)} TP0] Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 0, "
                         f"token usage: 0.80, #running-req: 60, #queue-req: 5, input throughput (token/s): {spike:.2f}")
    return "\n".join(lines) + "\n"


def commit_gpus(services: Services, start: float) -> None:
    """What the GPU collector commits: each GPU's samples and the host's series over them."""
    samples = []
    for second in range(0, HISTORY_S, 2):
        t = start + second
        util = [40 + 7 * gpu + (second % 20) for gpu in range(GPUS)]
        mem = [60_000 + 1_500 * gpu for gpu in range(GPUS)]
        samples += [Sample("gpu_util_pct", f"GPU{gpu}", t, util[gpu]) for gpu in range(GPUS)]
        samples += [Sample("gpu_mem_used_mib", f"GPU{gpu}", t, mem[gpu]) for gpu in range(GPUS)]
        samples += [Sample("gpu_util_pct", "", t, sum(util) / GPUS), Sample("gpu_util_pct_max", "", t, max(util)),
                    Sample("gpu_mem_used_mib", "", t, max(mem))]
    services.store.commit(Batch("gpu1", "gpu", "nvidia-smi", samples))


@pytest.fixture
def reading(tmp_path: Path, serve_app: Any) -> str:
    start = float(int(time.time()) - HISTORY_S)
    log = tmp_path / "server.log"
    log.write_text(server_log(start))
    host = HostConfig(name="gpu1", ssh="local", server_log=str(log))
    services = build_services(Config(server=ServerConfig(data_dir=str(tmp_path), database="kvwatch.db"),
                                     hosts=(host,)))
    for collector in services.collectors.values():
        collector.interval = 0.05
    commit_gpus(services, start)
    server = serve_app(create_app(services))
    wait_until(lambda: len(services.store.series("gpu1", "input_throughput")[0]) >= HISTORY_S // 10 - 1, timeout=30)
    wait_until(lambda: len(services.store.series("gpu1", "gen_throughput")[0]) >= HISTORY_S // 2 - 1, timeout=30)
    return server.url


def open_page(page: Any, url: str) -> list[str]:
    return open_dashboard(page, url)


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    across = a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
    return across and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]


def test_run_markers_have_short_labels_that_do_not_overlap(reading: str, page: Any) -> None:
    outside = open_page(page, reading)
    page.wait_for_function("document.getElementById('chart-throughput').markerCount === 4", timeout=15_000)
    page.wait_for_function("document.querySelectorAll('#chart-throughput .annotation').length === 4")
    labels = page.evaluate(BOXES, "#chart-throughput .annotation")
    texts = sorted(label["text"] for label in labels)
    assert texts == ["run 1", "run 2: mem-fraction-static=0.85", "run 3: 3 flags",
                     "run 4: served-model-name=<b>kimi</…"], texts  # the flag's tags are text, not bold
    assert page.locator("#chart-throughput .annotation b").count() == 0
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            assert not overlap(a, b), (a, b)
    # Inside the plot area, clear of the title and the legend above it.
    plot = page.evaluate(BOXES, "#chart-throughput .nsewdrag")[0]
    others = page.evaluate(BOXES, "#chart-throughput .legend") + page.evaluate(BOXES, "#chart-throughput .gtitle")
    for label in labels:
        assert plot["x"] - 1 <= label["x"] and label["x"] + label["w"] <= plot["x"] + plot["w"] + 1, label
        assert plot["y"] - 1 <= label["y"] and label["y"] + label["h"] <= plot["y"] + plot["h"] + 1, label
        assert not any(overlap(label, other) for other in others), label
    # The full story on hover: what changed and every flag.
    page.locator("#chart-throughput .annotation", has_text="run 3: 3 flags").hover()
    page.wait_for_function("document.querySelector('#chart-throughput .hoverlayer')?.textContent.includes('changed:')")
    hover = page.locator("#chart-throughput .hoverlayer").text_content() or ""
    for flag in ("chunked-prefill-size=4096", "kv-cache-dtype=fp8_e5m2", "mem-fraction-static=0.9", "tp-size=8"):
        assert flag in hover, hover
    assert outside == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#chart-throughput").screenshot(path=str(ARTIFACTS / "chart-markers.png"))


def test_gen_throughput_stays_readable_beside_input_spikes(reading: str, page: Any) -> None:
    open_page(page, reading)
    chart = "document.getElementById('chart-throughput')"
    assert page.evaluate(f"{chart}.data[1].visible") == "legendonly"
    assert page.evaluate(f"{chart}._fullLayout.yaxis2.visible") is False  # no right axis of nothing shown
    assert page.evaluate(f"{chart}.data[1].y.length") >= HISTORY_S // 10 - 1  # input's points are there
    gen_range = page.evaluate(f"{chart}._fullLayout.yaxis.range")
    assert 1320 <= gen_range[1] <= 1600, gen_range  # the axis is gen's: max 1,320, not input's 48,000
    gen_lines = page.evaluate(BOXES, "#chart-throughput .scatterlayer .trace:first-child path.js-line")
    plot = page.evaluate(BOXES, "#chart-throughput .nsewdrag")[0]
    assert gen_lines and gen_lines[0]["h"] >= 0.15 * plot["h"], (gen_lines, plot)  # its swings are visible
    assert page.locator("#chart-throughput .scatterlayer .trace").count() == 1  # input is not drawn
    page.locator("#chart-throughput").screenshot(path=str(ARTIFACTS / "chart-throughput-gen.png"))
    # One click on its legend entry shows input, on the right axis; gen's axis stays as it was.
    page.locator("#chart-throughput .legend .traces", has_text="input tok/s").click()
    page.wait_for_function(f"{chart}.data[1].visible === true")
    page.wait_for_function("document.querySelectorAll('#chart-throughput .scatterlayer .trace').length === 2")
    page.wait_for_function(f"{chart}._fullLayout.yaxis2.visible === true")
    assert page.evaluate(f"{chart}._fullLayout.yaxis2.range")[1] >= 48_000
    assert page.evaluate(f"{chart}._fullLayout.yaxis.range") == pytest.approx(gen_range)
    page.locator("#chart-throughput").screenshot(path=str(ARTIFACTS / "chart-throughput-input-shown.png"))


def test_gpu_charts_draw_a_line_per_gpu_named_from_the_catalog(reading: str, page: Any) -> None:
    open_page(page, reading)
    for chart, host_names in (("chart-gpu-util", ["util % (mean of 8 GPUs)", "hottest GPU (max of 8 GPUs)"]),
                              ("chart-gpu-mem", ["MiB (max of 8 GPUs)"])):
        traces = page.evaluate(f"document.getElementById('{chart}').data.map((t) => [t.name, t.y.length])")
        names = [name for name, _ in traces]
        assert names == host_names + [f"GPU{gpu}" for gpu in range(GPUS)], names
        assert all(count >= HISTORY_S // 2 - 1 for _, count in traces), traces
        legend = page.locator(f"#{chart} .legend .traces").all_text_contents()
        assert [text.strip() for text in legend] == names
        assert page.locator(f"#{chart} .scatterlayer .trace path.js-line").count() == len(names)
    util = page.evaluate("document.getElementById('chart-gpu-util').data")
    assert util[2]["y"][0] == 40 and util[9]["y"][0] == 40 + 7 * 7  # GPU0 and GPU7, each its own line
    page.locator("#chart-gpu-util").scroll_into_view_if_needed()
    page.locator("#chart-gpu-util").screenshot(path=str(ARTIFACTS / "chart-gpu-util.png"))
    page.locator("#chart-gpu-mem").screenshot(path=str(ARTIFACTS / "chart-gpu-mem.png"))
