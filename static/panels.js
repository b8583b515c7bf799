// The charts of one host, top to bottom, as the metric catalog declares them (app/metrics_catalog/
// charts.py, served by /api/catalog as `charts`): the page builds a section per chart, app.js fetches
// and follows every trace, charts.js draws it. `id` is the section's id and data-testid; a trace's
// `metric` is /api/series's. Every chart shares one time axis (see app.js).
import { el } from "./dom.js";

// Filled once by renderChartSlots, in place: the modules that import it keep the same array.
export const PANELS = [];

// The served chart in the shape charts.js draws: absent options are undefined, not JSON's null. A trace
// whose metric the catalog says is sampled on change (a count) is drawn as steps (`steps`).
function panelOf(chart, sampling) {
  return {
    id: chart.id, title: chart.title, yFormat: chart.y_format || undefined,
    yrange: chart.y_range ?? undefined, threshold: chart.threshold ?? undefined, perGpu: chart.per_gpu ?? undefined,
    traces: chart.traces.map((trace) => ({ metric: trace.metric, name: trace.name, axis: trace.axis,
                                           hidden: trace.hidden, steps: sampling.get(trace.metric) === "on_change" })),
  };
}

// A section for each chart the catalog declares, in its order; `metrics`: the catalog's entries.
export function renderChartSlots(container, charts, metrics = []) {
  const sampling = new Map(metrics.map((m) => [m.name, m.sampling]));
  PANELS.splice(0, PANELS.length, ...charts.map((chart) => panelOf(chart, sampling)));
  container.replaceChildren(...PANELS.map((panel) => el("section", { class: "chart", id: panel.id,
                                                                     "data-testid": panel.id,
                                                                     "aria-label": panel.title })));
}

// Shown in a GPU chart of a host that has stored no GPU sample: `gpu` is off by default, so an empty
// chart would look like a page that failed.
export const NO_GPU_NOTE = "no GPU samples from this host\nthe collector runs nvidia-smi there with gpu = true in its [[hosts]] table";

// The GPU charts get one thin line per GPU after the host lines, named as the store names the part
// (`GPU3`, nvidia-smi's index); how many GPUs there are is the catalog's `parts` for the host.
// Returns whether any chart's traces (or its note) changed.
export function setGpuParts(catalog) {
  let changed = false;
  for (const panel of PANELS.filter((p) => p.perGpu)) {
    const combine = catalog?.host_metrics?.[panel.perGpu];
    const count = combine && combine.over === "gpu" ? combine.parts : 0;
    const own = panel.traces.filter((t) => !t.rank);
    const parts = Array.from({ length: count }, (_, i) => ({ metric: panel.perGpu, rank: `GPU${i}`, name: `GPU${i}` }));
    if (panel.traces.length !== own.length + parts.length) changed = true;
    panel.traces = [...own, ...parts];
    const stored = catalog?.host_metrics;
    const note = stored && !own.some((t) => t.metric in stored) ? NO_GPU_NOTE : undefined;
    if (note !== panel.note) changed = true;
    panel.note = note;
  }
  return changed;
}

// A trace's name says what the host series combines, in the metric catalog's words that
// /api/series answers carry ("sum over 4 DP ranks", "mean of 8 GPUs"); one series: the name alone.
export function labelTrace(trace, series) {
  trace.base = trace.base || trace.name;
  const combine = series && series.combine;
  trace.name = combine && combine.parts ? `${trace.base} (${series.label})` : trace.base;
}

export function tracesFor(metric) {
  const found = [];
  for (const panel of PANELS) {
    panel.traces.forEach((trace, index) => {
      if (trace.metric === metric && !trace.rank) found.push({ panel, index });  // the stream has host series
    });
  }
  return found;
}
