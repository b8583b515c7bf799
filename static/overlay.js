// The compare view's overlay chart: each metric of each run on one axis of seconds after its zero
// (its start, or its steady window's start), the steady window shaded per run.

import { plotlyReady } from "./plotly.js";
import { onThemeChange, plotlyTheme } from "./theme.js";

export async function drawOverlay(element, overlay, runs) {
  if (!overlay) return;
  const Plotly = await plotlyReady;
  element.overlayDrawn = { overlay, runs }; // a theme change draws it again in the new run colours
  const metrics = Object.keys(overlay.series);
  const traces = [];
  const shapes = [];
  const labels = Object.fromEntries(runs.map((r) => [r.id, r.label || r.id]));
  const theme = plotlyTheme();
  metrics.forEach((metric, m) => {
    overlay.series[metric].forEach((entry, r) => {
      const color = theme.series[r % theme.series.length];
      traces.push({ type: "scattergl", mode: "lines", name: `${labels[entry.run]} · ${metric}`,
                    x: entry.points.map((p) => p[0]), y: entry.points.map((p) => p[1]),
                    line: { color, width: 1.2 }, xaxis: "x", yaxis: m === 0 ? "y" : `y${m + 1}` });
      if (m === 0 && entry.steady) {
        shapes.push({ type: "rect", xref: "x", yref: "paper", x0: entry.steady[0], x1: entry.steady[1], y0: 0, y1: 1,
                      fillcolor: color, opacity: 0.08, line: { width: 0 }, layer: "below", name: `steady-${entry.run}` });
      }
    });
  });
  const fg = theme.font.color;
  const grid = theme.axis.gridcolor;
  const layout = {
    height: 220 * Math.max(metrics.length, 1) + 60,
    margin: { l: 60, r: 20, t: 30, b: 40 },
    paper_bgcolor: theme.paper_bgcolor, plot_bgcolor: theme.plot_bgcolor, font: { color: fg },
    grid: { rows: metrics.length, columns: 1, pattern: "coupled" },
    xaxis: { title: { text: `seconds after ${overlay.align === "steady" ? "steady state" : "start"}` }, gridcolor: grid },
    legend: { orientation: "h", y: 1.08 },
    shapes,
  };
  metrics.forEach((metric, m) => {
    layout[m === 0 ? "yaxis" : `yaxis${m + 1}`] = { title: { text: metric }, gridcolor: grid };
  });
  Plotly.react(element, traces, layout, { displaylogo: false, responsive: true });
  element.dataset.traces = String(traces.length);
  element.dataset.shapes = String(shapes.length);
}

// theme.js re-coloured backgrounds, text and axes; the runs' lines and steady shading are drawn again.
onThemeChange(() => {
  for (const element of document.querySelectorAll(".js-plotly-plot")) {
    if (element.overlayDrawn) drawOverlay(element, element.overlayDrawn.overlay, element.overlayDrawn.runs);
  }
});
