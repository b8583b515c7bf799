// The per-host panels below the charts: the controller (hosts with a `launch`) and the compare view.
import { refreshRuns, showCompare } from "./compare.js";
import { refreshController, showController } from "./controller.js";
import { reported as report } from "./problems.js";

// The panels' box is aria-busy until the newest host's panels are drawn (a host picked while the
// previous one's were loading waits for its own).
const loads = { newest: 0 };

export async function showHostPanels(host) {
  const box = document.getElementById("host-panels");
  const load = ++loads.newest;
  box.setAttribute("aria-busy", "true");
  try {
    await Promise.all([
      showController(document.getElementById("controller-panel"), host).catch(report("controller")),
      showCompare(document.getElementById("compare-view"), host).catch(report("compare")),
    ]);
  } finally {
    if (load === loads.newest) box.setAttribute("aria-busy", "false");
  }
}

// A run started or ended: the controller's "runs now" flags and the compare view's run list follow.
export function refreshHostPanels(host) {
  return Promise.all([
    refreshController(document.getElementById("controller-panel"), host).catch(report("controller")),
    refreshRuns(document.getElementById("compare-view"), host).catch(report("compare")),
  ]);
}

// A source still catching up on a file that was already there: bytes read of bytes there, pace, time left.
export function catchUpText(source) {
  if (!source || !source.catching_up || !source.bytes_total) return null;
  const mib = (n) => (n / 1048576).toFixed(n < 10485760 ? 1 : 0);
  const pct = Math.floor((100 * source.bytes_read) / source.bytes_total);
  const parts = [`catching up: ${mib(source.bytes_read)} of ${mib(source.bytes_total)} MiB (${pct} %)`];
  if (source.lines_per_s) parts.push(`${Math.round(source.lines_per_s).toLocaleString("en")} lines/s`);
  if (source.eta_s !== null && source.eta_s !== undefined) parts.push(`${Math.ceil(source.eta_s)} s left`);
  return parts.join(" · ");
}
