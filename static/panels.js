// The charts of one host, top to bottom. Every chart shares one time axis (see app.js).

export const PANELS = [
  { id: "chart-throughput", title: "gen throughput (tok/s)",
    traces: [{ metric: "gen_throughput", name: "gen tok/s" }, { metric: "input_throughput", name: "input tok/s (right axis)", axis: "y2" }] },
  { id: "chart-usage", title: "KV token usage", threshold: 0.95, yrange: [0, 1.05],
    traces: [{ metric: "token_usage", name: "token usage" }] },
  { id: "chart-requests", title: "requests",
    traces: [{ metric: "running_req", name: "running" }, { metric: "queue_req", name: "queued" }] },
  { id: "chart-completions", title: "completions",
    traces: [{ metric: "completions", name: "done" },
             { metric: "completion_rate", name: "per second", axis: "y2", derived: true }] },
  { id: "chart-gpu-util", title: "GPU utilisation (%)",
    traces: [{ metric: "gpu_util_pct", name: "util %" }, { metric: "gpu_util_pct_max", name: "hottest GPU" }] },
  { id: "chart-gpu-mem", title: "GPU memory used per GPU (MiB)",
    traces: [{ metric: "gpu_mem_used_mib", name: "MiB" }] },
];

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
      if (trace.metric === metric) found.push({ panel, index });
    });
  }
  return found;
}
