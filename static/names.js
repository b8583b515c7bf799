// The metric names the page's code reads by name (the now row, the live completion rate, the compare
// overlay, the what-if answer), as the server declares them: app/metrics_catalog/names.py, sent as
// /api/catalog's `names` (GEN_THROUGHPUT: gen_throughput, ...). app.js sets them from its first
// catalog answer, before it builds the now row or loads a host: nothing reads them before that.
export const NAMES = {};

export function setNames(names) {
  Object.assign(NAMES, names);
}
