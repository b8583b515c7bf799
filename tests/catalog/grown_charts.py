"""A chart table grown the way a contributor grows it, each change one edit of CHARTS: a catalogued
metric added to an existing chart (swapped requests beside running and queued) and a new chart (GPU
temperature, with a line per GPU). Tests swap it in for charts.CHARTS and look at what the page gets."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kvwatch.app.metrics_catalog import charts
from kvwatch.app.metrics_catalog.charts import CHARTS, Chart, Trace

NEW_CHART = Chart("chart-gpu-temp", "GPU temperature (°C)", "°C",
                  (Trace("gpu_temp_c"), Trace("gpu_temp_c_max", "hottest GPU")), per_gpu="gpu_temp_c")
ADDED_TRACE = Trace("swapped_req", "swapped")


def grown_charts() -> tuple[Chart, ...]:
    grown = tuple(replace(chart, traces=(*chart.traces, ADDED_TRACE)) if chart.id == "chart-requests" else chart
                  for chart in CHARTS)
    return (*grown, NEW_CHART)


def grow_charts(monkeypatch: pytest.MonkeyPatch) -> tuple[Chart, ...]:
    grown = grown_charts()
    monkeypatch.setattr(charts, "CHARTS", grown)
    return grown
