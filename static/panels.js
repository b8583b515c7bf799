// The charts of one host, top to bottom: this table is the one place a chart or a chart's metric is
// declared (the page builds a section per entry, app.js fetches and follows every trace, charts.js draws
// it). `id` is the section's id and data-testid; a trace's `metric` is /api/series's (app/metrics_catalog
// says how a host's series combines). Every chart shares one time axis (see app.js).
import { el } from "./dom.js";

export const PANELS = [
  { id: "chart-throughput", title: "gen throughput (tok/s)",
    // Prefill's input tok/s comes in spikes many times gen tok/s: drawn over the gen line they make it
    // hard to read, so input is off until its legend entry is clicked (then on the right axis).
    traces: [{ metric: "gen_throughput", name: "gen tok/s" },
             { metric: "input_throughput", name: "input tok/s (right axis)", axis: "y2", hidden: true }] },
  { id: "chart-usage", title: "KV token usage", threshold: 0.95, yrange: [0, 1.05],
    traces: [{ metric: "token_usage", name: "token usage" }] },
  { id: "chart-requests", title: "requests",
    traces: [{ metric: "running_req", name: "running" }, { metric: "queue_req", name: "queued" }] },
  { id: "chart-completions", title: "completions",
    traces: [{ metric: "completions", name: "done" },
             { metric: "completion_rate", name: "per second", axis: "y2", derived: true }] },
  { id: "chart-gpu-util", title: "GPU utilisation (%)", perGpu: "gpu_util_pct",
    traces: [{ metric: "gpu_util_pct", name: "util %" }, { metric: "gpu_util_pct_max", name: "hottest GPU" }] },
  { id: "chart-gpu-mem", title: "GPU memory used per GPU (MiB)", perGpu: "gpu_mem_used_mib",
    traces: [{ metric: "gpu_mem_used_mib", name: "MiB" }] },
];

// A section for each chart, in the table's order.
export function renderChartSlots(container) {
  container.replaceChildren(...PANELS.map((panel) => el("section", { class: "chart", id: panel.id,
                                                                     "data-testid": panel.id,
                                                                     "aria-label": panel.title })));
}

// The GPU charts get one thin line per GPU after the host lines, named as the store names the part
// (`GPU3`, nvidia-smi's index); how many GPUs there are is the catalog's `parts` for the host.
// Returns whether any chart's traces changed.
export function setGpuParts(catalog) {
  let changed = false;
  for (const panel of PANELS.filter((p) => p.perGpu)) {
    const combine = catalog?.host_metrics?.[panel.perGpu];
    const count = combine && combine.over === "gpu" ? combine.parts : 0;
    const own = panel.traces.filter((t) => !t.rank);
    const parts = Array.from({ length: count }, (_, i) => ({ metric: panel.perGpu, rank: `GPU${i}`, name: `GPU${i}` }));
    if (panel.traces.length !== own.length + parts.length) changed = true;
    panel.traces = [...own, ...parts];
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
