// plotly.js (4.8 MB, a classic script) is fetched from the page's first byte (index.html preloads it), so
// its download and V8's background compile overlap the page's data fetches; it is *run* only when the
// page asks (`runPlotly`): its first run is one task of ~0.5 s on the main thread, and a page that leads
// with the fleet's rows draws them before that task, not after it. Code that draws awaits `plotlyReady`.
const SRC = "/vendor/plotly.min.js";

let settle = null;
let tag = null;

export const plotlyReady = new Promise((resolve, reject) => { settle = { resolve, reject }; })
  .then((plotly) => {
    performance.mark("kvwatch-start");  // the bench reads this: plotly.js loaded and run
    return plotly;
  });

// Runs plotly.js (once; later calls return the same promise).
export function runPlotly() {
  if (tag) return plotlyReady;
  const failed = () => settle.reject(new Error(`plotly.js did not load from ${SRC}`));
  tag = document.createElement("script");
  tag.id = "plotly-js";
  tag.src = SRC;
  tag.addEventListener("load", () => (window.Plotly ? settle.resolve(window.Plotly) : failed()));
  tag.addEventListener("error", failed);
  document.head.append(tag);
  return plotlyReady;
}
