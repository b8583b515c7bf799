"""The one-page run report: a self-contained HTML file (plotly.js inline, no network) a person can
attach to a message. `gather` reads what the report shows from the store; `render_html` draws it."""

from __future__ import annotations

from kvwatch.app.report.data import ReportData, Window, gather
from kvwatch.app.report.html import render_html

__all__ = ["ReportData", "Window", "gather", "render_html"]
