// The row of current values at the top: the selected host now, readable without hovering a chart.
// Filled from /api/hosts/{name}/status, the newest values then follow the stream's samples.
import { el } from "./dom.js";
import { NAMES } from "./names.js";
import { formatDuration } from "./status.js";

const count = (v) => Math.round(v).toLocaleString("en-US");
const MEAN = "gen_throughput_mean";  // the server's mean of the throughput, a status field of its own
// [testid, label, status field, format]; a metric's field is its catalog name (names.js), so the row is
// built once app.js has set the names.
const cellsOf = (names) => [
  ["now-gen", "gen tok/s", names.GEN_THROUGHPUT, count],
  ["now-gen-mean", "5-min mean", MEAN, count],
  ["now-usage", "KV token usage", names.TOKEN_USAGE, (v) => v.toFixed(3)],
  ["now-running", "running", names.RUNNING_REQ, count],
  ["now-queue", "queue", names.QUEUE_REQ, count],
  ["now-rate", "completions/s", names.COMPLETION_RATE, (v) => v.toFixed(2)],
  ["now-eta", "ETA", "eta_s", (v) => formatDuration(v)],
];
const FULL_MEAN_S = 300;  // the server's longest mean window; a younger run's mean covers the run alone
// The cells a live sample updates: the stream's metrics the row shows as "now".
const liveOf = (names) => new Set([names.GEN_THROUGHPUT, names.TOKEN_USAGE, names.RUNNING_REQ, names.QUEUE_REQ]);
const FLAG_LIMIT = 12;

// 14 s, 3 min 20 s: the span a mean covers, to the second.
function formatSeconds(seconds) {
  const whole = Math.max(Math.round(seconds), 0);
  if (whole < 60) return `${whole} s`;
  const secs = whole % 60;
  return secs ? `${Math.floor(whole / 60)} min ${secs} s` : `${whole / 60} min`;
}

function cell(testid, label) {
  const box = el("div", { class: "now" });
  box.setAttribute("data-testid", testid);
  box.append(el("span", { class: "now-label" }, label), el("span", { class: "now-value" }, "—"));
  return box;
}

export function createNowRow(root) {
  const cells = new Map();
  const live = liveOf(NAMES);
  root.replaceChildren();
  for (const [testid, label, field, format] of cellsOf(NAMES)) {
    const box = cell(testid, label);
    cells.set(field, { box, format });
    root.append(box);
  }
  const alerts = cell("now-alerts", "alerts");
  const verdict = cell("now-verdict", "diagnosis");
  verdict.hidden = true;
  const flags = cell("now-flags", "config");
  flags.classList.add("now-flags");
  root.append(alerts, verdict, flags);

  // "mean over 14 s" while the run is younger than the full window: the server never averages two runs.
  const meanLabel = (seconds) => {
    const label = cells.get(MEAN).box.querySelector(".now-label");
    const young = seconds !== null && seconds !== undefined && seconds < FULL_MEAN_S;
    label.textContent = young ? `mean over ${formatSeconds(seconds)}` : "5-min mean";
  };

  const show = (field, value) => {
    const entry = cells.get(field);
    if (!entry) return;
    const known = value !== null && value !== undefined && Number.isFinite(Number(value));
    entry.box.querySelector(".now-value").textContent = known ? entry.format(Number(value)) : "—";
  };

  return {
    clear() {
      for (const field of cells.keys()) show(field, null);
      meanLabel(null);
      alerts.querySelector(".now-value").textContent = "—";
      flags.querySelector(".now-value").replaceChildren(el("span", { class: "muted" }, "—"));
      verdict.hidden = true;
    },
    status(status) {
      if (!status) return;
      for (const field of cells.keys()) show(field, status[field]);
      meanLabel(status.mean_window_s);
      const active = status.alerts || [];
      const firing = active.filter((a) => a.state === "firing");
      const text = active.length ? active.map((a) => `${a.state}: ${a.rule}`).join(" · ") : "none";
      alerts.querySelector(".now-value").textContent = text;
      alerts.classList.toggle("now-bad", firing.length > 0);
      alerts.classList.toggle("now-warn", !firing.length && active.length > 0);
      const defining = status.run?.defining_flags || status.defining_flags || {};
      const entries = Object.entries(defining);
      const value = flags.querySelector(".now-value");
      value.replaceChildren(...entries.slice(0, FLAG_LIMIT).map(([k, v]) =>
        el("code", { class: "flag-chip" }, v === true ? `--${k}` : `--${k} ${v}`)));
      if (entries.length > FLAG_LIMIT) value.append(el("span", { class: "muted" }, ` +${entries.length - FLAG_LIMIT} more`));
      if (!entries.length) value.append(el("span", { class: "muted" }, status.run ? "defaults" : "no run yet"));
      flags.title = status.run?.id ? `run ${status.run.id}` : "";
    },
    diagnosis(answer) {
      const known = answer && answer.verdict && answer.verdict !== "unknown";
      verdict.hidden = !known;
      if (!known) return;
      verdict.querySelector(".now-value").textContent = answer.verdict.replace(/_/g, " ");
      verdict.title = (answer.evidence || []).map((e) => (typeof e === "string" ? e : JSON.stringify(e))).join("\n");
    },
    // A live sample: the newest value of a metric the row shows as "now".
    sample(metric, value) {
      if (live.has(metric)) show(metric, value);
    },
  };
}
