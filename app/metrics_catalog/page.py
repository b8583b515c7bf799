"""What the page is given to build its charts (/api/catalog's `charts`): each chart of charts.py with
its traces, every trace carrying its metric's catalog label and unit, so the page needs no table of
its own and nothing to look up."""

from __future__ import annotations

from typing import Any

import kvwatch.app.metrics_catalog.charts as chart_table
from kvwatch.app.metrics_catalog.charts import Chart, Trace
from kvwatch.app.metrics_catalog.entries import info


def page_charts() -> list[dict[str, Any]]:
    """The charts in page order. CHARTS is read at call time (through its module), so an app built
    with a swapped table serves that table."""
    return [chart_dict(chart) for chart in chart_table.CHARTS]


def chart_dict(chart: Chart) -> dict[str, Any]:
    return {
        "id": chart.id,
        "title": chart.title,
        "unit": chart.unit,
        "y_format": chart.y_format,
        "y_range": list(chart.y_range) if chart.y_range is not None else None,
        "threshold": chart.threshold,
        "per_gpu": chart.per_gpu,
        "traces": [trace_dict(trace) for trace in chart.traces],
    }


def trace_dict(trace: Trace) -> dict[str, Any]:
    entry = info(trace.metric)
    return {
        "metric": trace.metric,
        "name": trace.legend or entry.label,
        "label": entry.label,
        "unit": entry.unit,
        "axis": trace.axis,
        "hidden": trace.hidden,
    }
