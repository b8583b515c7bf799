// The per-host panels below the charts: the controller (hosts with a `launch`) and the compare view.
import { refreshRuns, showCompare } from "./compare.js";
import { refreshController, showController } from "./controller.js";

const report = (where) => (error) => console.error(`kvwatch ${where}:`, error);

export function showHostPanels(host) {
  const done = [
    showController(document.getElementById("controller-panel"), host).catch(report("controller")),
    showCompare(document.getElementById("compare-view"), host).catch(report("compare")),
  ];
  window.kvwatchPanels = Promise.all(done);
  return window.kvwatchPanels;
}

// A run started or ended: the controller's "runs now" flags and the compare view's run list follow.
export function refreshHostPanels(host) {
  return Promise.all([
    refreshController(document.getElementById("controller-panel"), host).catch(report("controller")),
    refreshRuns(document.getElementById("compare-view"), host).catch(report("compare")),
  ]);
}
