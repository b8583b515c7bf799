// What a flag change is predicted to give (POST .../predict), shown beside the diff before confirming,
// and how earlier predictions compared with what their runs measured (GET .../predictions).
// Every value is text (textContent): risks and bases quote log lines.
import { el } from "./dom.js";
import { NAMES } from "./names.js";

const count = (v) => (v === null || v === undefined ? "unknown" : Math.round(v).toLocaleString("en-US"));
const rate = (v) => (v === null || v === undefined ? "unknown" : `${Math.round(v).toLocaleString("en-US")} tok/s`);
// The predicted quantities, as predict and predictions key them: the KV pool's size (a server figure, not a
// catalogued series) and two metrics by their catalog names; read when drawn, after app.js set the names.
const predicted = () => ["max_total_num_tokens", NAMES.RUNNING_REQ, NAMES.GEN_THROUGHPUT];
const pct = (e) => (e === null || e === undefined ? "—" : `${e >= 0 ? "+" : ""}${(e * 100).toFixed(1)}%`);

// The flags the next run would change, as predict takes them: new or changed values, null for a dropped flag.
export function changesOf(diff) {
  const changes = {};
  for (const { name, to } of [...diff.added, ...diff.changed]) changes[name] = to;
  for (const { name } of diff.removed) changes[name] = null;
  return changes;
}

function line(testid, label, value) {
  return el("li", {}, `${label}: `, el("strong", { "data-testid": testid, text: value }));
}

// `answer` is predict's JSON (200), or {status, detail} when it could not be made.
export function renderPrediction(container, answer, status) {
  container.dataset.state = "done";
  if (status !== 200) {
    const detail = answer && answer.detail;
    const reason = detail && typeof detail === "object" ? detail.message || "invalid flags" : detail || `HTTP ${status}`;
    container.replaceChildren(el("p", { class: "muted", "data-testid": "pred-none", text: `no prediction: ${reason}` }));
    return;
  }
  const risks = answer.risks || [];
  const riskList = el("ul", { class: "pred-risks", "data-testid": "pred-risks" },
    ...risks.map((r) => el("li", { class: r.kind === "oom" || r.kind === "vetoed" ? "error" : "muted",
                                   "data-kind": r.kind,
                                   text: `${r.kind}${r.severity ? ` (${r.severity})` : ""}: ${r.message}` })));
  if (!risks.length) riskList.append(el("li", { class: "good", text: "no risk found" }));
  const basis = answer.basis || {};
  // A run that has not measured its own workload yet is predicted from an earlier run's: said first.
  const from = basis.workload_run
    ? el("p", { class: "muted", "data-testid": "pred-from-run", text: `from run ${basis.workload_run}'s measurements` +
                (basis.startup ? " (its startup lines too)" : "") + ": the run now has not measured its own yet" })
    : null;
  container.replaceChildren(...[from,
    el("ul", { class: "pred-values" },
      line("pred-tokens", "KV tokens", count(answer.max_total_num_tokens)),
      line("pred-running", "running requests", count(answer[NAMES.RUNNING_REQ])),
      line("pred-throughput", "generation", rate(answer[NAMES.GEN_THROUGHPUT]))),
    el("p", { class: "muted", text: "risks" }), riskList,
    el("details", {}, el("summary", { text: "how" }),
      el("pre", { class: "pred-basis", text: ["workload", "startup", ...predicted(), "total_gpu_memory"]
        .filter((k) => basis[k]).map((k) => `${k}: ${basis[k]}`).join("\n") }))].filter(Boolean));
}

// Earlier predictions of this host next to what their runs measured, newest first, and the mean errors.
export function renderAccuracy(container, answer) {
  const records = (answer && answer.predictions) || [];
  if (!records.length) {
    container.replaceChildren(el("p", { class: "muted", text: "no restart made with a prediction yet" }));
    return;
  }
  const head = el("tr", {}, ...["run", "", "KV tokens", "running", "gen tok/s"].map((t) => el("th", { text: t })));
  const rows = [];
  for (const r of records.slice(-5).reverse()) {
    const measured = r.measured || {};
    const cells = (label, values, fmt) => el("tr", { "data-run": r.run, "data-row": label },
      el("td", { text: label === "predicted" ? r.run : "" }), el("td", { text: label }),
      ...predicted().map((m) => el("td", { text: fmt(values[m], m) })));
    rows.push(cells("predicted", r.predicted || {}, (v) => count(v)),
              cells("measured", measured, (v) => (v === null || v === undefined ? "not yet" : count(v))),
              cells("error", r.error || {}, (e) => pct(e)));
  }
  const mean = answer.accuracy || {};
  const summary = predicted()
    .filter((m) => mean[m] && mean[m].runs)
    .map((m) => `${m}: mean |error| ${pct(mean[m].mean_abs_error).replace("+", "")} over ${mean[m].runs} run${mean[m].runs === 1 ? "" : "s"}`);
  container.replaceChildren(
    el("table", { class: "compare pred-accuracy" }, el("thead", {}, head), el("tbody", {}, ...rows)),
    el("p", { class: "muted", "data-testid": "pred-accuracy-summary",
              text: summary.length ? summary.join(" · ") : "no run has measured values yet" }));
}
