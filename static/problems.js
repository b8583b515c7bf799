// What the page could not load, listed where it shows until the same request answers again: a 404 (an
// unknown host, a wrong path), any other HTTP error, or a request given up. A state the API declares
// (a host without a controller) is no problem: api.js answers it as a value.
import { el } from "./dom.js";

const shown = new Map();  // what failed ("status", "runs", ...) -> why

function render() {
  const list = document.getElementById("problems");
  list.replaceChildren(...[...shown].map(([what, why]) => el("li", { "data-problem": what }, `${what}: ${why}`)));
  list.hidden = shown.size === 0;
}

export function reportProblem(what, error) {
  console.error(`kvwatch ${what}:`, error);
  shown.set(what, error.message || String(error));
  render();
}

export function clearProblem(what) {
  if (shown.delete(what)) render();
}

// A handler for `.catch`: the failure is shown under `what`, the caller goes on with null.
export const reported = (what) => (error) => {
  reportProblem(what, error);
  return null;
};

// `promise`'s value, or null when it failed: the failure shown under `what` until it answers again.
export async function watched(what, promise) {
  try {
    const value = await promise;
    clearProblem(what);
    return value;
  } catch (error) {
    reportProblem(what, error);
    return null;
  }
}
