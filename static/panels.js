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
    traces: [{ metric: "gpu_util_pct", name: "util % (max over GPUs)" }] },
  { id: "chart-gpu-mem", title: "GPU memory used (MiB)",
    traces: [{ metric: "gpu_mem_used_mib", name: "MiB (sum over GPUs)" }] },
];

export function tracesFor(metric) {
  const found = [];
  for (const panel of PANELS) {
    panel.traces.forEach((trace, index) => {
      if (trace.metric === metric) found.push({ panel, index });
    });
  }
  return found;
}
