// Plotly only: one chart per panel, fed with [t, v] points (t in epoch seconds).

const WINDOW_POINTS = 10000;

function toDates(points) {
  return points.map(([t]) => new Date(t * 1000));
}

export function createChart(element, title, traces, { threshold } = {}) {
  const layout = {
    title: { text: title, font: { size: 14 } },
    margin: { l: 50, r: 20, t: 36, b: 36 },
    xaxis: { type: "date" },
    showlegend: traces.length > 1,
    legend: { orientation: "h" },
    shapes: threshold === undefined ? [] : [{
      type: "line", xref: "paper", x0: 0, x1: 1, y0: threshold, y1: threshold,
      line: { dash: "dot", color: "#c0392b" },
    }],
  };
  const data = traces.map((name) => ({ x: [], y: [], name, type: "scatter", mode: "lines" }));
  Plotly.newPlot(element, data, layout, { responsive: true, displaylogo: false });
  element.received = 0;
}

export function setTrace(element, index, points) {
  Plotly.restyle(element, { x: [toDates(points)], y: [points.map(([, v]) => v)] }, [index]);
  element.received += points.length;
}

export function extendTrace(element, index, points) {
  if (!points.length) return;
  Plotly.extendTraces(element, { x: [toDates(points)], y: [points.map(([, v]) => v)] }, [index], WINDOW_POINTS);
  element.received += points.length;
}
