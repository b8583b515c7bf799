// Plotly only: one chart per panel, fed with [t, v] points (t in epoch seconds, plotted as dates).
import { appendGapped, dropFirst, forgetSteps, gapped } from "./gaps.js";
import { cssColor as cssVar, onThemeChange, plotlyTheme } from "./theme.js";

const WINDOW_POINTS = 10000;
// Every colour of a chart is a custom property of style.css, read through theme.js: the host lines'
// two accents, and one colour per GPU line (eight apart, then again), none of them an accent.
const HOST_COLORS = ["--accent", "--accent2"];
const PART_COLORS = ["--part1", "--part2", "--part3", "--part4", "--part5", "--part6", "--part7", "--part8"];


function toX(points) {
  return points.map(([t]) => new Date(t * 1000));
}


// The page's one theme (theme.js) as a chart layout starts.
function themed() {
  const { paper_bgcolor, plot_bgcolor, font, axis } = plotlyTheme();
  return {
    paper_bgcolor, plot_bgcolor, font,
    xaxis: { type: "date", gridcolor: axis.gridcolor, linecolor: axis.linecolor },
    yaxis: { gridcolor: axis.gridcolor, zerolinecolor: axis.zerolinecolor, rangemode: "tozero" },
  };
}

// One newPlot with history, range and markers: every later relayout or restyle is another full redraw.
export function createChart(element, panel, { series = [], range = null, markers = [], labels = true } = {}) {
  const theme = themed();
  const many = panel.traces.length > 3;
  const rightAxisShown = panel.traces.some((t) => t.axis === "y2" && !t.hidden);
  const layout = {
    ...theme,
    title: { text: plainText(panel.title), font: { size: 14 }, x: 0.01, xanchor: "left" },
    // A chart with a line per GPU lists them to the right of the plot: across the top they wrap into
    // rows that cover the lines and the markers' labels.
    margin: { l: 56, r: many ? 200 : rightAxisShown ? 56 : 16, t: 32, b: 32 },
    yaxis: { ...theme.yaxis, ...(panel.yrange ? { range: panel.yrange, autorange: false } : {}),
             ...(panel.yFormat ? { tickformat: panel.yFormat, hoverformat: panel.yFormat } : {}) },
    // The right axis shows while a trace on it does (input tok/s starts hidden: no ticks of nothing).
    yaxis2: { overlaying: "y", side: "right", showgrid: false, rangemode: "tozero", color: cssVar(HOST_COLORS[1]),
              visible: rightAxisShown },
    showlegend: panel.traces.length > 1,
    legend: many ? { orientation: "v", x: 1.01, xanchor: "left", y: 1, yanchor: "top", font: { size: 11 } }
                 : { orientation: "h", x: 1, xanchor: "right", y: 1.12 },
    hovermode: "x unified",
    uirevision: "keep",
  };
  element.threshold = panel.threshold;
  element.note = panel.note;  // why the chart is empty, when the page knows (panels.js)
  element.stepTraces = panel.traces.map((trace) => Boolean(trace.steps));
  if (range) Object.assign(layout.xaxis, { range: range.map((t) => new Date(t * 1000)), autorange: false });
  Object.assign(layout, markerLayout(element, markers, labels, range || shownRange(element, markers)));
  element.markerCount = markers.length;
  const shown = panel.traces.map((_, i) => gapped(element, i, series[i] || []));
  let part = 0;
  const data = panel.traces.map((trace, i) => {
    // one GPU's line: thin, in a colour of its own, under the host's lines (`meta`: its colour's property)
    const color = trace.rank ? PART_COLORS[part++ % PART_COLORS.length] : HOST_COLORS[i % HOST_COLORS.length];
    return {
      x: toX(shown[i]), y: shown[i].map(([, v]) => v), name: plainText(trace.name), type: "scatter",
      connectgaps: false, mode: "lines", yaxis: trace.axis || "y", visible: trace.hidden ? "legendonly" : true,
      line: { width: trace.rank ? 1 : 2, color: cssVar(color), ...(trace.steps ? { shape: "hv" } : {}) }, opacity: trace.rank ? 0.75 : 1, meta: { color },
    };
  });
  element.received = data.reduce((sum, trace) => sum + trace.x.length, 0);
  Plotly.newPlot(element, data, layout,
                 // A double-click is the page's (back to the live window), not plotly's reset to the first range.
                 { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"],
                   doubleClick: false });
  element.on("plotly_restyle", () => syncRightAxis(element));  // a legend click shows or hides a trace
}

function syncRightAxis(element) {
  const shown = element.data.some((trace) => trace.yaxis === "y2" && trace.visible === true);
  if (element.layout.yaxis2 && element.layout.yaxis2.visible !== shown) {
    Plotly.relayout(element, { "yaxis2.visible": shown, ...(element.data.length > 3 ? {} : { "margin.r": shown ? 56 : 16 }) });
  }
}

export function setTrace(element, index, points) {
  setTraces(element, [points], [index]);
}

// Every trace of a chart in one redraw. The traces' arrays are replaced and the chart redrawn, as
// appendPoints does, and never through a restyle of x: that clears the axis type (plotly guesses it
// again from the data, "linear" on a chart with no points, so a zoom there gave -1..6), and naming
// the type again in the same update resets the axis to autorange (a zoom's window was lost).
export function setTraces(element, pointLists, indices) {
  pointLists = pointLists.map((points, i) => gapped(element, indices[i], points));
  indices.forEach((index, i) => {
    const trace = element.data[index];
    trace.x = toX(pointLists[i]);
    trace.y = pointLists[i].map(([, v]) => v);
  });
  Plotly.redraw(element);
  element.received += pointLists.reduce((sum, p) => sum + p.length, 0);
}

export function extendTrace(element, index, points) {
  extendTraces(element, new Map([[index, points]]));
}

// One redraw for every trace of a chart: redraws, not points, are what cost on a slow machine.
export function extendTraces(element, byIndex, maxPoints = WINDOW_POINTS) {
  appendPoints(element, byIndex, null, maxPoints);
}

// Live points and the shared x range in ONE redraw per chart (extendTraces + relayout draw it twice,
// and redraws, not points, are what a frame can afford). The arrays are extended in place, the oldest
// points beyond maxPoints dropped, and plotly recomputes the chart once.
export function appendPoints(element, byIndex, range, maxPoints = WINDOW_POINTS) {
  let added = 0;
  for (const [index, points] of byIndex) {
    const trace = element.data?.[index];
    if (!trace || !points.length) continue;
    appendGapped(element, index, points, toX);
    dropFirst(element, index, element.data[index].x.length - maxPoints);
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

// Drop a trace's points at and after `t` (epoch seconds): what was drawn there was computed before
// something the server learnt later (a derived series' run boundary), and is fetched again from `t`.
export function dropFrom(element, index, t) {
  const trace = element.data?.[index];
  if (!trace) return false;
  const keep = trace.x.findIndex((x) => new Date(x).getTime() >= t * 1000);
  if (keep < 0) return false;
  trace.x.splice(keep);
  trace.y.splice(keep);
  forgetSteps(element, index);
  // a gap's break left last marks nothing: the next point brings its own if it is far (appendGapped)
  while (trace.y.length && trace.y[trace.y.length - 1] === null) {
    trace.x.pop();
    trace.y.pop();
  }
  Plotly.redraw(element);
  return true;
}

export function lastTime(element, index) {
  const x = element.data?.[index]?.x;
  return x && x.length ? new Date(x[x.length - 1]).getTime() / 1000 : undefined;
}

// Text from a log (a flag's value, an event) is text on the chart, never markup: plotly reads tags
// and entities in labels, so these three are written as entities it turns back into characters.
export function plainText(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

// Markers: a vertical line per run start / server event, a short label at the top of the plot area
// (the whole story on hover). Labels that would overlap go one row down; three rows at most, and a
// marker with no room left keeps its line without a label.
export function setMarkers(element, markers, { labels = true } = {}) {
  Plotly.relayout(element, markerLayout(element, markers, labels));
  element.markerCount = markers.length;
}

const LABEL_ROWS = 3;
const CHAR_PX = 6.2;  // 10 px labels: a generous width per character, so estimates never overlap

function markerLayout(element, markers, labels, range = shownRange(element, markers)) {
  element.markers = markers;
  element.markerLabels = labels;
  const shapes = element.threshold === undefined ? [] : [{
    type: "line", xref: "paper", x0: 0, x1: 1, y0: element.threshold, y1: element.threshold,
    line: { dash: "dot", color: cssVar("--bad"), width: 2 }, name: "threshold",
  }];
  for (const marker of markers) {
    const x = new Date(marker.t * 1000);
    shapes.push({ type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1, name: `marker-${marker.kind}`,
                  line: { color: cssVar(marker.kind === "failure" ? "--bad" : "--marker"), width: 1.5, dash: "dash" } });
  }
  const note = element.note ? [{ text: element.note.split("\n").map(plainText).join("<br>"), xref: "paper", yref: "paper", x: 0.5, y: 0.5,
                                 showarrow: false, font: { color: cssVar("--muted") }, name: "note" }] : [];
  return { shapes, annotations: [...(labels ? labelRows(element, markers, range) : []), ...note] };
}

function plotWidth(element) {
  const size = element._fullLayout?._size;
  return size ? size.w : Math.max(200, (element.clientWidth || 800) - 72);
}

function shownRange(element, markers) {
  const range = element.layout?.xaxis?.range?.map((x) => new Date(x).getTime() / 1000);
  if (range && range.every(Number.isFinite)) return range;
  const times = markers.map((m) => m.t);
  return times.length ? [Math.min(...times) - 60, Math.max(...times) + 60] : null;
}

function labelRows(element, markers, range) {
  const width = plotWidth(element);
  const span = range ? Math.max(1e-6, range[1] - range[0]) : 0;
  const rowEnds = [];
  const out = [];
  for (const marker of [...markers].sort((a, b) => a.t - b.t)) {
    const px = span ? ((marker.t - range[0]) / span) * width : 0;
    const textPx = marker.label.length * CHAR_PX + 8;
    const left = px + textPx > width;  // no room to the right of its line: the label goes left of it
    const start = left ? px - textPx : px;
    let row = 0;
    while (row < rowEnds.length && rowEnds[row] > start - 4) row += 1;
    if (row >= LABEL_ROWS) continue;
    rowEnds[row] = start + textPx;
    const detail = Array.isArray(marker.detail) ? marker.detail : [marker.detail || marker.label];
    out.push({ x: new Date(marker.t * 1000), xref: "x", yref: "paper", y: 1 - row * 0.09, yanchor: "top",
               xanchor: left ? "right" : "left", text: plainText(marker.label), showarrow: false,
               bgcolor: cssVar("--card"), opacity: 0.9, borderpad: 1,
               font: { size: 10, color: cssVar("--fg") }, hovertext: detail.map(plainText).join("<br>"),
               hoverlabel: { align: "left" }, name: `label-${marker.kind}` });
  }
  return out;
}

// The labels' rows depend on how many seconds a pixel is: a range of another length places them again.
function relabel(element, range) {
  if (!range || !element.markers?.length || !element.markerLabels) return {};
  const before = shownRange(element, element.markers);
  const length = range[1] - range[0];
  if (before && Math.abs((before[1] - before[0]) - length) <= 0.01 * length) return {};
  return { annotations: labelRows(element, element.markers, range) };
}

export function setXRange(element, range) {
  // The type is repeated: plotly re-guesses "linear" for a chart that has no points yet.
  const update = range ? { "xaxis.type": "date", "xaxis.range": range.map((t) => new Date(t * 1000)),
                           "xaxis.autorange": false, ...relabel(element, range) }
                       : { "xaxis.type": "date", "xaxis.autorange": true };
  Plotly.relayout(element, update);
}

// A theme change (theme.js re-coloured backgrounds, text and axes): the lines, the right axis, the
// threshold and the markers take the new theme's colours too.
function recolor(element) {
  if (!element.data) return;
  const colored = element.data.map((trace, i) => [i, trace.meta?.color]).filter(([, color]) => color);
  if (colored.length) {
    Plotly.restyle(element, { "line.color": colored.map(([, color]) => cssVar(color)) }, colored.map(([i]) => i));
  }
  Plotly.relayout(element, { "yaxis2.color": cssVar(HOST_COLORS[1]),
                             ...markerLayout(element, element.markers || [], element.markerLabels) });
}

onThemeChange(() => {
  for (const element of document.querySelectorAll(".chart.js-plotly-plot")) recolor(element);
});
