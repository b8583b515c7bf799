// Plotly only: one chart per panel, fed with [t, v] points (t in epoch seconds, plotted as dates).

const WINDOW_POINTS = 10000;

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function toX(points) {
  return points.map(([t]) => new Date(t * 1000));
}

// Lines break at gaps: two points further apart than a few sampling intervals get a null between them
// (with connectgaps false), so a collector that was away for ten minutes is not drawn as a straight line.
const GAP_STEPS = 5;
const MIN_GAP_S = 5;

export function gapLimit(points) {
  const steps = [];
  for (let i = 1; i < points.length; i += 1) {
    const step = points[i][0] - points[i - 1][0];
    if (step > 0) steps.push(step);
  }
  if (!steps.length) return null;
  steps.sort((a, b) => a - b);
  return Math.max(MIN_GAP_S, GAP_STEPS * steps[Math.floor(steps.length / 2)]);
}

export function withGaps(points, limit, after) {
  if (!limit) return points;
  const out = [];
  let previous = after;
  for (const point of points) {
    if (previous !== undefined && point[0] - previous > limit) out.push([(previous + point[0]) / 2, null]);
    out.push(point);
    previous = point[0];
  }
  return out;
}

function gapped(element, index, points) {
  element.gapLimits = element.gapLimits || [];
  element.gapLimits[index] = gapLimit(points) ?? element.gapLimits[index] ?? null;
  return withGaps(points, element.gapLimits[index]);
}

// Live points keep the limit their trace's history set (or learn one from what they bring).
function gappedAfter(element, index, points) {
  element.gapLimits = element.gapLimits || [];
  if (!element.gapLimits[index]) element.gapLimits[index] = gapLimit(points);
  return withGaps(points, element.gapLimits[index], lastTime(element, index));
}

function themed() {
  const fg = cssVar("--fg");
  const grid = cssVar("--grid");
  return {
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: fg, size: 12 },
    xaxis: { type: "date", gridcolor: grid, linecolor: grid },
    yaxis: { gridcolor: grid, zerolinecolor: grid, rangemode: "tozero" },
  };
}

// One newPlot with history, range and markers: every later relayout or restyle is another full redraw.
export function createChart(element, panel, { series = [], range = null, markers = [], labels = true } = {}) {
  const theme = themed();
  const layout = {
    ...theme,
    title: { text: panel.title, font: { size: 14 }, x: 0.01, xanchor: "left" },
    margin: { l: 56, r: panel.traces.some((t) => t.axis === "y2") ? 56 : 16, t: 32, b: 32 },
    yaxis: { ...theme.yaxis, ...(panel.yrange ? { range: panel.yrange, autorange: false } : {}) },
    yaxis2: { overlaying: "y", side: "right", showgrid: false, rangemode: "tozero", color: cssVar("--accent2") },
    showlegend: panel.traces.length > 1,
    legend: { orientation: "h", x: 1, xanchor: "right", y: 1.12 },
    hovermode: "x unified",
    uirevision: "keep",
  };
  element.thresholdShapes = panel.threshold === undefined ? [] : [{
    type: "line", xref: "paper", x0: 0, x1: 1, y0: panel.threshold, y1: panel.threshold,
    line: { dash: "dot", color: cssVar("--bad"), width: 2 }, name: "threshold",
  }];
  Object.assign(layout, markerLayout(element, markers, labels));
  element.markerCount = markers.length;
  if (range) Object.assign(layout.xaxis, { range: range.map((t) => new Date(t * 1000)), autorange: false });
  const colors = [cssVar("--accent"), cssVar("--accent2")];
  const shown = panel.traces.map((_, i) => gapped(element, i, series[i] || []));
  const data = panel.traces.map((trace, i) => ({
    x: toX(shown[i]), y: shown[i].map(([, v]) => v), name: trace.name, type: "scatter", connectgaps: false,
    mode: "lines", yaxis: trace.axis || "y", line: { width: 1.5, color: colors[i % colors.length] },
  }));
  element.received = data.reduce((sum, trace) => sum + trace.x.length, 0);
  Plotly.newPlot(element, data, layout,
                 // A double-click is the page's (back to the live window), not plotly's reset to the first range.
                 { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"],
                   doubleClick: false });
}

export function setTrace(element, index, points) {
  setTraces(element, [points], [index]);
}

// Every trace of a chart in one restyle (one redraw).
export function setTraces(element, pointLists, indices) {
  pointLists = pointLists.map((points, i) => gapped(element, indices[i], points));
  Plotly.restyle(element, { x: pointLists.map(toX), y: pointLists.map((p) => p.map(([, v]) => v)) }, indices);
  element.received += pointLists.reduce((sum, p) => sum + p.length, 0);
}

export function extendTrace(element, index, points) {
  extendTraces(element, new Map([[index, points]]));
}

// One redraw for every trace of a chart: redraws, not points, are what cost on a slow machine.
export function extendTraces(element, byIndex, maxPoints = WINDOW_POINTS) {
  const indices = [...byIndex.keys()].filter((i) => byIndex.get(i).length);
  if (!indices.length) return;
  const points = indices.map((i) => gappedAfter(element, i, byIndex.get(i)));
  Plotly.extendTraces(element, { x: points.map(toX), y: points.map((p) => p.map(([, v]) => v)) }, indices,
                      maxPoints);
  element.received += points.reduce((sum, p) => sum + p.length, 0);
}

// Live points and the shared x range in ONE redraw per chart (extendTraces + relayout draw it twice,
// and redraws, not points, are what a frame can afford). The arrays are extended in place, the oldest
// points beyond maxPoints dropped, and plotly recomputes the chart once.
export function appendPoints(element, byIndex, range, maxPoints = WINDOW_POINTS) {
  let added = 0;
  for (const [index, points] of byIndex) {
    const trace = element.data?.[index];
    if (!trace || !points.length) continue;
    for (const [t, v] of gappedAfter(element, index, points)) {
      trace.x.push(new Date(t * 1000));
      trace.y.push(v);
    }
    if (trace.x.length > maxPoints) {
      trace.x.splice(0, trace.x.length - maxPoints);
      trace.y.splice(0, trace.y.length - maxPoints);
    }
    added += points.length;
  }
  if (!added) return false;
  if (range) {
    Object.assign(element.layout.xaxis, { type: "date", range: range.map((t) => new Date(t * 1000)),
                                          autorange: false });
  }
  element.received += added;
  Plotly.redraw(element);
  return true;
}

export function lastTime(element, index) {
  const x = element.data?.[index]?.x;
  return x && x.length ? new Date(x[x.length - 1]).getTime() / 1000 : undefined;
}

// Markers: a vertical line per run start / server event, labelled at the top of the chart.
export function setMarkers(element, markers, { labels = true } = {}) {
  Plotly.relayout(element, markerLayout(element, markers, labels));
  element.markerCount = markers.length;
}

function markerLayout(element, markers, labels) {
  const shapes = [...element.thresholdShapes];
  const annotations = [];
  for (const marker of markers) {
    const x = new Date(marker.t * 1000);
    shapes.push({ type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1, name: `marker-${marker.kind}`,
                  line: { color: cssVar(marker.kind === "failure" ? "--bad" : "--marker"), width: 1.5, dash: "dash" } });
    if (labels) {
      annotations.push({ x, xref: "x", yref: "paper", y: 1, yanchor: "bottom", xanchor: "left", text: marker.label,
                         showarrow: false,
                         font: { size: 10, color: cssVar("--muted") }, hovertext: marker.detail || marker.label });
    }
  }
  return { shapes, annotations };
}

export function setXRange(element, range) {
  // The type is repeated: plotly re-guesses "linear" for a chart that has no points yet.
  const update = range ? { "xaxis.type": "date", "xaxis.range": range.map((t) => new Date(t * 1000)),
                           "xaxis.autorange": false }
                       : { "xaxis.type": "date", "xaxis.autorange": true };
  Plotly.relayout(element, update);
}

export function retheme(element) {
  const theme = themed();
  Plotly.relayout(element, { paper_bgcolor: theme.paper_bgcolor, plot_bgcolor: theme.plot_bgcolor,
                             "font.color": theme.font.color, "xaxis.gridcolor": theme.xaxis.gridcolor,
                             "yaxis.gridcolor": theme.yaxis.gridcolor });
}
