"""The page's charts are declared once, in app/metrics_catalog/charts.py: each trace draws a catalogued
metric, the catalog's `chart` follows the table, and what /api/catalog gives the page (`charts`) is the
table with each trace's catalog label and unit. The page drawing it is tests/browser/test_charts_from_catalog.py."""

from __future__ import annotations

import pytest

from kvwatch.app.metrics_catalog import CATALOG, CHARTS, info, page_charts
from tests.catalog.grown_charts import ADDED_TRACE, NEW_CHART, grow_charts


def test_every_trace_draws_a_catalogued_metric() -> None:
    assert len({chart.id for chart in CHARTS}) == len(CHARTS)
    for chart in CHARTS:
        assert chart.traces, chart.id
        for trace in chart.traces:
            assert trace.metric in CATALOG, (chart.id, trace.metric)  # a typo would draw a guessed series
        legends = [trace.legend or info(trace.metric).label for trace in chart.traces]
        assert len(set(legends)) == len(legends), chart.id
        if chart.per_gpu is not None:  # its parts are GPUs, and its host line is on the chart too
            assert info(chart.per_gpu).over_gpus != "sum" and chart.per_gpu in {t.metric for t in chart.traces}
        if chart.y_range is not None and chart.threshold is not None:
            assert chart.y_range[0] <= chart.threshold <= chart.y_range[1]


def test_the_catalog_names_the_chart_that_draws_each_metric() -> None:
    drawn = {trace.metric: chart.id for chart in reversed(CHARTS) for trace in chart.traces}
    assert {name: entry.chart for name, entry in CATALOG.items() if entry.chart} == drawn
    assert info("token_usage").chart == "chart-usage" and info("gpu_temp_c").chart is None


def test_the_page_is_given_the_table_with_catalog_labels_and_units() -> None:
    given = page_charts()
    assert [chart["id"] for chart in given] == [chart.id for chart in CHARTS]
    throughput = given[0]
    assert throughput["title"] == "gen throughput (tok/s)" and throughput["unit"] == "tokens/s"
    assert throughput["traces"][1] == {"metric": "input_throughput", "name": "input tok/s (right axis)",
                                       "label": "input throughput", "unit": "tokens/s", "axis": "y2", "hidden": True}
    usage = next(chart for chart in given if chart["id"] == "chart-usage")
    assert usage["threshold"] == 0.95 and usage["y_range"] == [0.0, 1.05] and usage["per_gpu"] is None


def test_one_edit_of_the_table_reaches_what_the_page_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    grow_charts(monkeypatch)
    given = {chart["id"]: chart for chart in page_charts()}
    assert list(given)[-1] == NEW_CHART.id
    temp = given[NEW_CHART.id]
    assert temp["per_gpu"] == "gpu_temp_c" and temp["unit"] == "°C"
    assert [(t["name"], t["unit"]) for t in temp["traces"]] == [("GPU temperature", "°C"), ("hottest GPU", "°C")]
    assert [t["metric"] for t in given["chart-requests"]["traces"]] == ["running_req", "queue_req", ADDED_TRACE.metric]
    assert info("swapped_req").chart == "chart-requests" and info("gpu_temp_c_max").chart == NEW_CHART.id
