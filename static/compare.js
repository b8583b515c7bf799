// The compare view of one host: pick runs and a baseline, the steady-state table with change % and the
// within-noise marker, the flag diff, copy as Markdown / download CSV, the overlay chart, windows by hand.
import { compareURL, fetchAlike, fetchCompare, fetchCompareText, fetchRuns } from "./api.js";
import { el } from "./dom.js";
import { fmt } from "./flageditor.js";
import { NAMES } from "./names.js";
import { drawOverlay } from "./overlay.js";
import { watched } from "./problems.js";

const state = { host: null, runs: [], chosen: [], baseline: null, windows: {}, align: "start", result: null,
                minSteady: null,  // minSteady: seconds set on the page; null = the host's configured minimum
                hostCount: 1, across: false };  // across: the host's newest config's runs on the other hosts too

// How many hosts the page follows: with more than one, the view offers the same config on the others.
export function setHostCount(count) {
  state.hostCount = count;
}

// The host's runs and, across hosts, the newest run of its newest run's config on each other host.
async function loadRuns(host) {
  const own = await watched("runs", fetchRuns(host));
  if (!own || !state.across || !own.length) return own;
  const answer = await watched("runs on other hosts", fetchAlike(own.at(-1).id));
  return [...own, ...((answer && answer.alike) || [])];
}
// The overlay chart's series; read when asked for: the names arrive with the page's first catalog answer.
const overlay = () => [NAMES.GEN_THROUGHPUT, NAMES.TOKEN_USAGE];

export async function showCompare(root, host) {
  state.host = host;
  const runs = (await loadRuns(host)) || [];
  if (host !== state.host) return;
  const own = runs.filter((r) => r.host === host);
  const chosen = state.across ? [own.at(-1), ...runs.filter((r) => r.host !== host)] : runs.slice(-2);
  Object.assign(state, { runs, chosen: chosen.filter(Boolean).map((r) => r.id), baseline: null, windows: {}, result: null });
  root.hidden = runs.length === 0;
  if (root.hidden) return;
  render(root);
  await refresh(root);
}

// The server said something changed (a run started or ended, a run's numbers moved): the run list is
// fetched again, and the view drawn again when it changed; else the table is fetched again and redrawn
// when its answer changed, unless the user is typing in the view (a redraw would take the input).
export async function refreshRuns(root, host) {
  if (host !== state.host) return;
  const runs = await loadRuns(host);
  if (!runs || host !== state.host) return;
  const ids = (list) => list.map((r) => `${r.id}/${r.ended_at ?? ""}`).join(",");
  if (ids(runs) !== ids(state.runs)) await showCompare(root, host);
  else if (!root.hidden && !typingIn(root)) await refresh(root, { unlessSame: true });
}

function typingIn(root) {
  const active = document.activeElement;
  return root.contains(active) && (active.tagName === "SELECT" || (active.tagName === "INPUT" && active.type !== "checkbox"));
}

const runLabel = (run) => `${run.host === state.host ? "" : `${run.host}: `}${run.id} · ${new Date(run.started_at * 1000).toLocaleString()}`;

function render(root) {
  const picks = state.runs.map((run) => el("label", { class: "run-pick" },
    el("input", { type: "checkbox", value: run.id, checked: state.chosen.includes(run.id),
                  "data-testid": `cmp-run-${run.id}`, onchange: (e) => toggleRun(root, run.id, e.target.checked) }),
    ` ${runLabel(run)}`));
  root.replaceChildren(
    el("h2", { text: `compare runs · ${state.host}` }),
    el("div", { class: "cmp-picks", id: "cmp-runs", "data-testid": "cmp-runs" }, ...picks),
    el("div", { class: "cmp-actions" },
      el("label", {}, "baseline ", el("select", { id: "cmp-baseline", "data-testid": "cmp-baseline",
                                                  onchange: (e) => { state.baseline = e.target.value; refresh(root); } })),
      el("label", {}, "align ", el("select", { id: "cmp-align", "data-testid": "cmp-align",
                                               onchange: (e) => { state.align = e.target.value; refresh(root); } },
        new Option("at start", "start"), new Option("at steady state", "steady"))),
      el("label", { title: "the shortest automatic steady window compared; a window set by hand is used as set" },
        "min steady ", el("input", { type: "number", min: "0", step: "0.5", id: "cmp-min-steady",
                                     "data-testid": "cmp-min-steady", class: "cmp-min",
                                     onchange: (e) => { state.minSteady = Math.max(0, Number(e.target.value)) * 60; refresh(root); } }),
        el("span", { id: "cmp-min-default", "data-testid": "cmp-min-default", class: "muted" })),
      el("button", { type: "button", id: "cmp-copy", "data-testid": "cmp-copy", text: "copy as Markdown",
                     onclick: () => copyMarkdown(root) }),
      el("button", { type: "button", id: "cmp-csv", "data-testid": "cmp-csv", text: "download CSV",
                     onclick: downloadCsv }),
      el("button", { type: "button", id: "cmp-reload", "data-testid": "cmp-reload", text: "reload runs",
                     onclick: () => showCompare(root, state.host) }),
      state.hostCount > 1
        ? el("button", { type: "button", id: "cmp-across", "data-testid": "cmp-across", "aria-pressed": String(state.across),
                         title: "the newest run's config: its newest run on each other host, side by side",
                         text: state.across ? "this host's runs only" : "same config on other hosts",
                         onclick: () => { state.across = !state.across; showCompare(root, state.host); } })
        : null,
      el("span", { id: "cmp-note", "data-testid": "cmp-note", class: "muted" })),
    el("p", { class: "error", id: "cmp-error", "data-testid": "cmp-error" }),
    el("div", { id: "cmp-table", "data-testid": "cmp-table", class: "cmp-table" }),
    el("div", { id: "cmp-flags", "data-testid": "cmp-flags" }),
    el("div", { id: "cmp-windows", "data-testid": "cmp-windows", class: "cmp-windows" }),
    el("div", { id: "cmp-overlay", "data-testid": "cmp-overlay", class: "cmp-overlay" }));
  root.querySelector("#cmp-align").value = state.align;
}

function toggleRun(root, id, on) {
  state.chosen = state.runs.map((r) => r.id).filter((r) => (r === id ? on : state.chosen.includes(r)));
  if (!state.chosen.includes(state.baseline)) state.baseline = null;
  refresh(root);
}

function query(format) {
  const query = new URLSearchParams({ runs: state.chosen.join(",") });
  if (state.baseline) query.set("baseline", state.baseline);
  for (const [id, [from, to]] of Object.entries(state.windows)) {
    if (state.chosen.includes(id)) query.append("window", `${id}:${from}:${to}`);
  }
  if (state.minSteady !== null) query.set("min_steady", String(state.minSteady));
  if (format) query.set("format", format);
  else { query.set("overlay", overlay().join(",")); query.set("align", state.align); query.set("max_points", "800"); }
  return query;
}

async function refresh(root, { unlessSame = false } = {}) {
  const error = root.querySelector("#cmp-error");
  const few = state.runs.length < 2 ? "one run so far: a comparison needs two" : "pick two runs or more";
  error.textContent = state.chosen.length < 2 ? few : "";
  if (state.chosen.length < 2) return;
  const { ok, status, answer: body } = await fetchCompare(query());
  if (!ok) {
    error.textContent = `${status}: ${fmt(body.detail)}`;
    return;
  }
  if (unlessSame && JSON.stringify(body) === JSON.stringify(state.result)) return;
  state.result = body;
  const baseline = root.querySelector("#cmp-baseline");
  baseline.replaceChildren(...body.runs.map((r) => new Option(r.label || r.id, r.id)));
  baseline.value = body.baseline || state.baseline || body.runs[0].id;
  showMinimum(root, body);
  renderTable(root.querySelector("#cmp-table"), body);
  renderFlagDiff(root.querySelector("#cmp-flags"), body);
  renderWindows(root, body);
  await drawOverlay(root.querySelector("#cmp-overlay"), body.overlay, body.runs);
  root.dataset.loaded = String(Number(root.dataset.loaded || 0) + 1);
}

// The minimum in force, in minutes, and the default it differs from.
function showMinimum(root, body) {
  const input = root.querySelector("#cmp-min-steady");
  if (document.activeElement !== input) input.value = String(Number((body.min_steady_s / 60).toFixed(2)));
  const fallback = body.default_min_steady_s;
  root.querySelector("#cmp-min-default").textContent = body.min_steady_s === fallback ? " min"
    : ` min (default ${Number((fallback / 60).toFixed(2))} min)`;
}

const number = (v) => (v === null || v === undefined ? "—" : Math.abs(v) >= 100 ? Math.round(v).toLocaleString()
  : Number(v.toPrecision(3)).toString());

function cell(row, i, baseIndex) {
  const status = row.status[i];
  if (row.values[i] === null && status && status !== "steady" && status !== "exact") {
    // status_text: the server's words ("... (the run has ended)" rather than "yet" for an ended run)
    const text = (row.status_text && row.status_text[i]) || (status === "no_data" ? "no data" : "not enough steady data yet");
    return el("td", { class: "not-enough", "data-status": status, text });
  }
  const change = row.change_pct[i];
  const noise = row.within_noise[i];
  const td = el("td", { "data-status": status || "" }, el("span", { class: "value", text: number(row.values[i]) }));
  if (row.source && row.source[i]) td.title = `from ${row.source[i]}`;
  if (row.combine && row.combine[i]) td.title = row.combine[i];  // "sum over 4 DP ranks" (metric catalog)
  if (i !== baseIndex && change !== null && change !== undefined) {
    td.append(el("span", { class: noise ? "change noise" : "change", text: ` ${change > 0 ? "+" : ""}${change.toFixed(1)}%` }));
    if (noise) td.append(el("span", { class: "noise-mark", title: "within noise", text: " ≈" }));
  }
  // Raw samples pruned by retention: the value came (partly) from 10 s rollup buckets.
  if (row.resolution_s && row.resolution_s[i]) {
    td.append(el("span", { class: "rollup-mark", title: `${Math.round(100 * row.rollup_share[i])}% of the steady window from ${row.resolution_s[i]} s rollup buckets`,
                           text: ` [${row.resolution_s[i]} s rollup]` }));
  }
  return td;
}

// The window used; one set by hand says so, with the server's note when it is shorter than the minimum.
function steadyCell(r) {
  if (r.steady.status !== "steady") return el("td", { class: "not-enough", text: r.steady.message || r.steady.status });
  const span = `${Math.round(r.steady.start_offset_s)}–${Math.round(r.steady.end_offset_s)} s`;
  if (r.steady.auto) return el("td", { text: span });
  const note = r.steady.message && r.steady.message !== "set by hand" ? r.steady.message : "";
  return el("td", { text: `${span} (by hand)` },
    ...(note ? [el("div", { class: "muted window-note", "data-testid": `cmp-window-note-${r.id}`, text: note })] : []));
}

function renderTable(container, body) {
  const baseIndex = body.runs.findIndex((r) => r.id === body.baseline);
  const head = el("tr", {}, el("th", { text: "metric" }), ...body.runs.map((r, i) =>
    el("th", { text: `${r.label || r.id}${i === baseIndex ? " (baseline)" : ""}` })));
  const steady = el("tr", { class: "steady-row" }, el("td", { text: "steady window" }), ...body.runs.map(steadyCell));
  const rows = body.rows.map((row) => el("tr", { "data-metric": row.metric },
    el("td", { text: `${row.label}${row.unit ? ` (${row.unit})` : ""}` }),
    ...row.values.map((_, i) => cell(row, i, baseIndex))));
  container.replaceChildren(el("table", { class: "compare" }, el("thead", {}, head), el("tbody", {}, steady, ...rows)),
    el("p", { class: "muted", text: "change % against the baseline; ≈ marks a difference within noise (bootstrap CI)" }),
    ...body.rows.filter((r) => r.source_note).map((r) => el("p", { class: "muted source-note", text: `${r.label} from: ${r.source_note}` })),
    ...(body.runs.some((r) => r.resolution_s) ? [el("p", { class: "muted rollup-note", text: body.resolution_rule || "" })] : []));
}

function renderFlagDiff(container, body) {
  if (!body.flag_diff || !body.flag_diff.length) {
    container.replaceChildren(el("p", { class: "muted", text: "same flags" }));
    return;
  }
  const head = el("tr", {}, el("th", { text: "flag" }), ...body.runs.map((r) => el("th", { text: r.label || r.id })));
  const rows = body.flag_diff.map((d) => el("tr", {}, el("td", {}, el("code", { text: `--${d.flag}` })),
    ...d.values.map((v) => el("td", { text: v === null || v === undefined ? "—" : fmt(v) }))));
  container.replaceChildren(el("h3", { text: "flag diff" }), el("table", { class: "compare flag-diff-table" },
    el("thead", {}, head), el("tbody", {}, ...rows)));
}

// Two number inputs per run (seconds after its start); "apply" refetches with window=ID:FROM:TO.
function renderWindows(root, body) {
  const inputs = body.runs.map((r) => {
    const from = el("input", { type: "number", step: "1", min: "0", "data-testid": `cmp-from-${r.id}`,
                               value: String(Math.round(r.steady.start_offset_s)) });
    const to = el("input", { type: "number", step: "1", min: "0", "data-testid": `cmp-to-${r.id}`,
                             value: String(Math.round(r.steady.end_offset_s)) });
    const apply = () => { state.windows[r.id] = [Number(from.value), Number(to.value)]; refresh(root); };
    const auto = () => { delete state.windows[r.id]; refresh(root); };
    return el("div", { class: "cmp-window" }, el("span", { text: `${r.label || r.id}: steady from ` }), from,
      el("span", { text: " to " }), to, el("span", { text: " s " }),
      el("button", { type: "button", "data-testid": `cmp-apply-${r.id}`, text: "apply", onclick: apply }),
      r.steady.auto ? null : el("button", { type: "button", "data-testid": `cmp-auto-${r.id}`, text: "automatic",
                                            onclick: auto }));
  });
  root.querySelector("#cmp-windows").replaceChildren(el("h3", { text: "steady windows" }), ...inputs);
}

async function copyMarkdown(root) {
  const note = root.querySelector("#cmp-note");
  const text = await fetchCompareText(query("markdown")).catch((error) => {
    note.textContent = `not copied: ${error.message}`;
    return null;
  });
  if (text === null) return;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (plain http on another host): a selected textarea and execCommand.
    const area = el("textarea", { "data-testid": "cmp-markdown-fallback" });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  note.textContent = "Markdown copied";
}

function downloadCsv() {
  const link = el("a", { href: compareURL(query("csv")), download: `kvwatch-compare-${state.chosen.join("-")}.csv` });
  document.body.append(link);
  link.click();
  link.remove();
}
