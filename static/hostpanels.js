// The per-host panels below the charts: the controller (hosts with a `launch`) and the compare view.
import { showCompare } from "./compare.js";
import { showController } from "./controller.js";

export function showHostPanels(host) {
  const report = (where) => (error) => console.error(`kvwatch ${where}:`, error);
  const done = [
    showController(document.getElementById("controller-panel"), host).catch(report("controller")),
    showCompare(document.getElementById("compare-view"), host).catch(report("compare")),
  ];
  window.kvwatchPanels = Promise.all(done);
  return window.kvwatchPanels;
}
