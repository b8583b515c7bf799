// Wiring: pick a host, load its history, then follow the live stream.
import { fetchHosts, fetchSeries, openStream } from "./api.js";
import { createChart, extendTrace, setTrace } from "./charts.js";

const PANELS = [
  { id: "chart-throughput", title: "gen throughput (tok/s)", metrics: ["gen_throughput"] },
  { id: "chart-usage", title: "KV token usage", metrics: ["token_usage"], threshold: 0.95 },
];

const state = { host: null };

function panelFor(metric) {
  for (const panel of PANELS) {
    const index = panel.metrics.indexOf(metric);
    if (index >= 0) return { element: document.getElementById(panel.id), index };
  }
  return null;
}

async function loadHost(host) {
  state.host = host;
  for (const panel of PANELS) {
    const element = document.getElementById(panel.id);
    createChart(element, panel.title, panel.metrics, { threshold: panel.threshold });
    for (const [index, metric] of panel.metrics.entries()) {
      const series = await fetchSeries(host, metric);
      setTrace(element, index, series.points);
    }
  }
}

function onSample({ host, points }) {
  if (host !== state.host) return;
  for (const [metric, values] of Object.entries(points)) {
    const target = panelFor(metric);
    if (target) extendTrace(target.element, target.index, values);
  }
}

function onHost({ host, state: hostState }) {
  if (host === state.host) document.getElementById("host-state").textContent = hostState;
}

async function main() {
  const picker = document.getElementById("host-picker");
  const hosts = await fetchHosts();
  for (const host of hosts) picker.add(new Option(host.name, host.name));
  picker.addEventListener("change", () => loadHost(picker.value));
  if (hosts.length) {
    document.getElementById("host-state").textContent = hosts[0].state;
    await loadHost(hosts[0].name);
  }
  openStream({ sample: onSample, host: onHost }, (streamState) => {
    document.getElementById("stream-state").textContent = streamState;
  });
  window.kvwatchReady = true;
}

main();
