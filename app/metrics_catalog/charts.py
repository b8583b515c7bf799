"""The page's charts, top to bottom, and what each draws: the one place a chart, or a metric on a
chart, is declared. /api/catalog serves them (`page.page_charts`) and static/panels.js builds a section
and a plotly figure per chart from that answer; a metric's `chart` in the catalog is read from here.

A trace names a catalogued metric (its label and unit come from the catalog); its `legend` is the
short name the page's legend shows, to which the page adds what the host series combines ("sum over 4
DP ranks"). This module imports nothing of the catalog, so the catalog can ask it where a metric is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Axis = Literal["y", "y2"]
# The KV token usage at which a run is saturated, declared once: the usage chart's dotted line (page and
# report), the default `token_usage_high` alert's `fire_at`, and the mark `kvwatch status` puts on it.
TOKEN_USAGE_HIGH = 0.95


@dataclass(frozen=True, slots=True)
class Trace:
    metric: str  # an /api/series metric, catalogued in entries.py
    legend: str = ""  # "": the catalog's label
    axis: Axis = "y"  # "y2": the right axis, for a series of another scale
    hidden: bool = False  # starts as a legend entry only; a click on it draws it


@dataclass(frozen=True, slots=True)
class Chart:
    id: str  # the section's id and data-testid
    title: str
    unit: str  # the left axis's unit, in the catalog's words
    traces: tuple[Trace, ...]
    y_format: str = ""  # a d3 format for the left axis's ticks and hover; "": plotly's own
    y_range: tuple[float, float] | None = None  # fixed, else from zero to the data
    threshold: float | None = None  # a dotted line across the chart
    per_gpu: str | None = None  # also draw this metric once per GPU, thin, after the host lines


CHARTS: tuple[Chart, ...] = (
    Chart("chart-throughput", "gen throughput (tok/s)", "tokens/s", (
        Trace("gen_throughput", "gen tok/s"),
        # Prefill's input tok/s comes in spikes many times gen tok/s: drawn over the gen line they make
        # it hard to read, so input waits for a click on its legend entry (then on the right axis).
        Trace("input_throughput", "input tok/s (right axis)", axis="y2", hidden=True),
    )),
    Chart("chart-usage", "KV token usage", "ratio", (Trace("token_usage", "token usage"),),
          y_range=(0.0, 1.05), threshold=TOKEN_USAGE_HIGH),
    Chart("chart-requests", "requests", "requests", (Trace("running_req", "running"), Trace("queue_req", "queued"))),
    Chart("chart-completions", "completions", "requests", (
        Trace("completions", "done"),
        Trace("completion_rate", "per second", axis="y2"),  # a rate beside a count: its own scale
    )),
    Chart("chart-gpu-util", "GPU utilisation (%)", "%",
          (Trace("gpu_util_pct", "util %"), Trace("gpu_util_pct_max", "hottest GPU")), per_gpu="gpu_util_pct"),
    Chart("chart-gpu-mem", "GPU memory used per GPU (MiB)", "MiB", (Trace("gpu_mem_used_mib", "MiB"),),
          per_gpu="gpu_mem_used_mib"),
)


def chart_of(metric: str) -> str | None:
    """The first chart that draws `metric` (the catalog's `chart`), None: not drawn. Read at call time,
    so a test that swaps CHARTS sees the catalog follow."""
    for chart in CHARTS:
        if any(trace.metric == metric for trace in chart.traces):
            return chart.id
    return None
