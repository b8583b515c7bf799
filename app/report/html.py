"""ReportData -> one self-contained HTML page: plotly.js is inlined from the installed plotly package,
so the file opens offline, as a mail attachment, years later. Every stored string is escaped."""

from __future__ import annotations

import datetime as dt
import html
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

import kvwatch.app.metrics_catalog.charts as chart_table
from kvwatch.app.compare.render import MARKDOWN_METRICS, cell
from kvwatch.app.metrics_catalog.charts import Chart, Trace
from kvwatch.app.metrics_catalog.entries import CATALOG, info
from kvwatch.app.report.data import ReportData

RATIO_METRICS = frozenset(name for name, entry in CATALOG.items() if entry.unit == "ratio")
EMPTY_NOTICE = ("No samples stored for this host in this window: neither raw samples nor rollups cover it "
                "(never collected, or not this host's).")
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}.meta{color:#5b6475}
table{border-collapse:collapse;margin:4px 0}td,th{padding:3px 10px;border-bottom:1px solid #e3e6ec;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f4f6f9}.empty{color:#a33}code{font-size:12px}
"""


def _utc(t: float | None) -> str:
    if t is None:
        return "-"
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _number(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric in RATIO_METRICS:
        return f"{value:.1%}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def panels(data: ReportData) -> list[tuple[Chart, list[Trace]]]:
    """The page's charts (the catalog's CHARTS, in order) that have data, each with its traces that do."""
    drawn = [(chart, [trace for trace in chart.traces if trace.metric in data.series]) for chart in chart_table.CHARTS]
    return [(chart, traces) for chart, traces in drawn if traces]


def _trace(data: ReportData, trace: Trace) -> go.Scatter:
    t, v = data.series[trace.metric]
    x = pd.to_datetime(t, unit="s", utc=True)
    steps = {"shape": "hv"} if info(trace.metric).sampling == "on_change" else {}  # held between samples
    # One axis a panel here: what the page puts on its right axis, or hides until asked, starts as a
    # legend entry a click draws.
    shown = True if trace.axis == "y" and not trace.hidden else "legendonly"
    return go.Scatter(x=x, y=v, mode="lines", name=trace.legend or info(trace.metric).label,
                      line={"width": 1.3, **steps}, visible=shown)


def figure(data: ReportData) -> go.Figure | None:
    drawn = panels(data)
    if not drawn:
        return None
    fig = make_subplots(rows=len(drawn), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=[chart.title for chart, _ in drawn])
    for row, (chart, traces) in enumerate(drawn, start=1):
        for trace in traces:
            fig.add_trace(_trace(data, trace), row=row, col=1)
        if chart.threshold is not None:
            fig.add_hline(y=chart.threshold, line={"dash": "dot", "color": "#c0392b"}, row=row, col=1)
    for start, run_id in data.run_starts:
        when = pd.Timestamp(start, unit="s", tz="UTC")
        for row in range(1, len(drawn) + 1):
            label = {"annotation_text": run_id, "annotation_position": "top right", "annotation_font_size": 10}
            fig.add_vline(x=when, line={"dash": "dash", "color": "#8a93a6", "width": 1}, row=row, col=1,
                          **(label if row == 1 else {}))  # the run's name once, on the top chart
    fig.update_layout(height=230 * len(drawn) + 60, margin={"l": 60, "r": 20, "t": 40, "b": 30},
                      template="plotly_white", legend={"orientation": "h"})
    return fig


def _facts_section(data: ReportData) -> str:
    if not data.facts:
        return ""
    rows = [[str(k), str(v)] for k, v in data.facts.items()]
    return "<h2>Run</h2>" + _table(["", "value"], rows)


def _summary_section(data: ReportData) -> str:
    rows = [[r["metric"], str(r["points"]), *(_number(r["metric"], r[k]) for k in ("last", "median", "p5", "p95",
                                                                                 "max")),
             _source(r), str(r.get("combine", ""))]
            for r in data.summary]
    header = ["metric", "points", "last", "median", "p5", "p95", "max", "from", "host value"]
    return "<h2>Summary</h2>" + _coverage_note(data) + _table(header, rows)


def _source(row: dict[str, Any]) -> str:
    if row.get("resolution_s") is None:
        return "raw"
    rollup = f"{row['resolution_s']} s rollup"
    return rollup if row.get("rollup_points") == row["points"] else rollup + " + raw"


def _coverage_note(data: ReportData) -> str:
    """Says where retention left only rollups, and what that does to the numbers."""
    if not data.rollup_points:
        return ""
    series = ", ".join(f"{m} ({n})" for m, n in sorted(data.rollup_points.items()))
    return (f"<p class=rollup-note>Raw samples of part of this window were pruned (server.retention_days): "
            f"these series come there from 10 s rollup buckets, one point a bucket, drawn and summarised as "
            f"the bucket's mean: {html.escape(series)}. Their median and p5/p95 are then over 10 s means "
            "(an approximation); max stays exact (each bucket keeps its maximum); last is the newest "
            "sample or bucket mean.</p>")


def _events_section(data: ReportData) -> str:
    if not data.event_counts:
        return "<h2>Events</h2><p>No retractions, errors or restarts in this window.</p>"
    counts = _table(["event", "count"], [[k, str(n)] for k, n in data.event_counts.items()])
    recent = [[_span(g.first, g.last), g.event, str(g.count), g.detail] for g in data.event_groups]
    return ("<h2>Events</h2>" + counts + "<h2>Latest events</h2><p class=meta>Consecutive events of one kind "
            "are one row: their count and span.</p>" + _table(["time", "event", "count", "detail"], recent))


def _span(first: float, last: float) -> str:
    if first == last:
        return _utc(first)
    start, end = _utc(first), _utc(last)
    return f"{start} – {end[11:] if start[:10] == end[:10] else end}"  # the date once when it is one day


def _runs_section(data: ReportData) -> str:
    """Per run of the window: its span, its own flags (those off SGLang's defaults) and its events."""
    if not data.runs:
        return ""
    rows = [[r.run_id, _utc(r.started_at), _utc(r.ended_at) if r.ended_at is not None else r.state, r.flags,
             "; ".join(g.label() for g in r.events) or "-"] for r in data.runs]
    return "<h2>Runs</h2>" + _table(["run", "started", "ended", "flags", "events (UTC)"], rows)


def _comparison_section(result: dict[str, Any] | None) -> str:
    """compare's table in the orientation of its Markdown: one row a config, one column a metric."""
    if not result:
        return ""
    rows = {row["metric"]: row for row in result["rows"]}
    shown = [rows[m] for m in MARKDOWN_METRICS if m in rows]
    baseline = next(i for i, run in enumerate(result["runs"]) if run["id"] == result["baseline"])
    body = [[("baseline: " if i == baseline else "") + f"{run['label']} ({run['id']})",
             *(cell(row, i, baseline) for row in shown)] for i, run in enumerate(result["runs"])]
    note = ("<p class=meta>Steady-state median (p5-p95), change against the baseline; ≈ = within noise "
            f"({html.escape(result.get('noise_rule', ''))}).</p>")
    return "<h2>Comparison of this host's runs</h2>" + _table(["config", *(r["label"] for r in shown)], body) + note


def _campaigns_section(data: ReportData) -> str:
    """Each tuning campaign of the host: every step predicted vs measured, skipped and why, the prices."""
    parts = []
    for campaign in data.campaigns:
        table = campaign["table"]
        columns = list(table[0]) if table else []
        head = (f"<h2>Campaign {html.escape(campaign['id'])}: {html.escape(campaign['state'])}</h2>"
                f"<p class=meta>{html.escape(campaign.get('reason') or '')}</p>")
        prices = "".join(f"<li>{html.escape(text)}</li>" for text in campaign.get("prices", []))
        parts.append(head + _table(columns, [[row[c] for c in columns] for row in table])
                     + (f"<ul class=prices>{prices}</ul>" if prices else ""))
    return "".join(parts)


def render_html(data: ReportData) -> str:
    """The whole page; about 5 MB, nearly all of it plotly.js."""
    fig = figure(data)
    chart = (fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})
             if fig is not None else f'<p class="empty">{html.escape(EMPTY_NOTICE)}</p>')
    title = f"kvwatch report: {data.host}"
    meta = (f"{html.escape(data.window.label)} · {_utc(data.first_t)} to {_utc(data.last_t)}"
            f" · generated {_utc(data.generated_at)}")
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
        f"<h1>{html.escape(title)}</h1><div class=meta>{meta}</div>"
        f"{chart}{_facts_section(data)}{_summary_section(data)}{_runs_section(data)}"
        f"{_comparison_section(data.comparison)}{_campaigns_section(data)}"
        f"{_events_section(data)}</body></html>\n"
    )
