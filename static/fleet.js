// The fleet view: one row per host, most urgent first (the server orders them: app/fleet/attention.py),
// with the job's totals above. Shown as the page's front when kvwatch follows more than one host; a
// click on a row opens that host's charts below. Everything from the server is set as text.
import { fetchFleet } from "./api.js";
import { el } from "./dom.js";
import { formatAge, formatDuration } from "./status.js";

const number = (v, digits = 0) => (v === null || v === undefined ? "–" : v.toLocaleString("en-US", {
  maximumFractionDigits: digits, minimumFractionDigits: digits }));
const eta = (s) => (s === null || s === undefined ? "–" : s === 0 ? "done" : formatDuration(s));

// A row's last 15 minutes as a line (bucket means from /api/fleet's `spark`; a gap stays a gap).
const SVG = "http://www.w3.org/2000/svg";
function sparkline(values, top, label) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("viewBox", "0 0 60 16");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  const high = top ?? Math.max(1e-9, ...(values || []).filter((v) => v !== null));
  let run = [];
  const flush = () => {
    if (run.length > 1) {
      const line = document.createElementNS(SVG, "polyline");
      line.setAttribute("points", run.join(" "));
      svg.append(line);
    }
    run = [];
  };
  (values || []).forEach((v, i, all) => {
    if (v === null) { flush(); return; }
    run.push(`${(60 * i) / Math.max(1, all.length - 1)},${(15 - (14 * Math.min(v, high)) / high).toFixed(1)}`);
  });
  flush();
  return svg;
}

// [heading, the cell's value, how a value is drawn (else it is the cell's text)]. A cell is written
// again only when its value changed: 256 rows a second must not rebuild 3,840 cells.
const COLUMNS = [
  ["host", (r) => r.host],
  ["group", (r) => r.group || "–"],
  ["needs", (r) => r.attention_reason || "–"],
  ["tok/s", (r) => number(r.gen_throughput)],
  ["15 min", (r) => r.spark?.gen_throughput, (v, r) => sparkline(v, null, `${r.host} tok/s, last 15 minutes`)],
  ["KV usage", (r) => number(r.token_usage, 2)],
  ["15 min", (r) => r.spark?.token_usage, (v, r) => sparkline(v, 1, `${r.host} KV usage, last 15 minutes`)],
  ["running", (r) => number(r.running_req)],
  ["queue", (r) => number(r.queue_req)],
  ["done", (r) => (r.target_completions ? `${number(r.completions)} / ${number(r.target_completions)}` : number(r.completions))],
  ["ETA", (r) => eta(r.eta_s)],
  ["verdict", (r) => r.verdict_label || "–"],
  ["run", (r) => (r.run ? r.run.id : "–")],
  ["config vs fleet", (r) => differenceText(r.config_diff)],
  ["freshest line", (r) => freshness(r.sources)],
];

function differenceText(diff) {
  const entries = Object.entries(diff || {});
  if (!entries.length) return "common";
  return entries.map(([k, v]) => (v === null ? `no --${k}` : v === true ? `--${k}` : `--${k} ${v}`)).join(" ");
}

function freshness(sources) {
  const ages = Object.values(sources || {}).filter((a) => a !== null && a !== undefined);
  return ages.length ? formatAge(Math.min(...ages)) : "–";
}

function totalsText(t) {
  const parts = [`${t.hosts} hosts`, `${number(t.gen_throughput)} tok/s`];
  if (t.completions !== null) {
    parts.push(t.target_completions ? `${number(t.completions)} of ${number(t.target_completions)} done`
                                    : `${number(t.completions)} done`);
  }
  if (t.eta_s !== null) parts.push(`job ETA ${eta(t.eta_s)}`);
  return parts.join(" · ");
}

export function createFleetView(section, { onPick }) {
  const totals = el("p", { class: "fleet-totals", "data-testid": "fleet-totals" });
  const filter = el("input", { type: "search", placeholder: "filter hosts", "aria-label": "filter hosts",
                               "data-testid": "fleet-filter" });
  const body = el("tbody");
  const head = el("thead", {}, el("tr", {}, ...COLUMNS.map(([name]) => el("th", { scope: "col" }, name))));
  section.replaceChildren(el("div", { class: "fleet-top" }, el("h2", {}, "fleet"), filter, totals),
                          el("table", { class: "fleet-table", "data-testid": "fleet-table" }, head, body));
  let last = null;
  const drawn = new Map();  // host -> { tr, cells, keys }: the rows on the page, written cell by cell
  filter.addEventListener("input", () => last && render(last));
  body.addEventListener("click", (event) => {
    const row = event.target.closest("tr[data-host]");
    if (row) onPick(row.dataset.host);
  });

  function render(answer) {
    last = answer;
    const needle = filter.value.trim().toLowerCase();
    const shown = answer.hosts.filter((r) => !needle || [r.host, r.group, r.attention_reason, r.verdict_label, r.run?.id]
      .some((text) => (text || "").toLowerCase().includes(needle)));
    const hosts = new Set(answer.hosts.map((r) => r.host));
    for (const host of drawn.keys()) if (!hosts.has(host)) drawn.delete(host);
    const wanted = shown.map(rowFor);
    const current = body.children;
    if (current.length !== wanted.length || wanted.some((tr, i) => current[i] !== tr)) body.replaceChildren(...wanted);
    const groups = Object.entries(answer.groups || {}).map(([name, t]) => `${name}: ${totalsText(t)}`);
    totals.textContent = [totalsText(answer.totals), ...groups].join("  |  ");
  }

  function rowFor(r) {
    let row = drawn.get(r.host);
    if (!row) {
      const cells = COLUMNS.map(() => el("td"));
      row = { tr: el("tr", { "data-host": r.host, "data-testid": "fleet-row", tabindex: "0" }, ...cells), cells,
              keys: COLUMNS.map(() => undefined) };
      drawn.set(r.host, row);
    }
    row.tr.dataset.attention = r.attention;
    row.tr.className = `attention-${r.attention}`;
    COLUMNS.forEach(([, value, draw], i) => {
      const v = value(r);
      const key = draw ? JSON.stringify(v ?? null) : String(v);
      if (row.keys[i] === key) return;
      row.keys[i] = key;
      if (draw) row.cells[i].replaceChildren(draw(v, r));
      else row.cells[i].textContent = v;
    });
    return row.tr;
  }

  async function refresh() {
    const answer = await fetchFleet();
    render(answer);
    return answer;
  }

  // An alert that fires (the stream's `alert` event, /api/alerts's item) moves its row up at once, before
  // the next /api/fleet answer (throttled, and slow on a loaded host) orders every row: firing alerts
  // lead (app/fleet/attention.py's first rank). Anything else waits for that answer.
  function noteAlert(alert) {
    if (!last || !alert || alert.state !== "firing") return;
    const row = last.hosts.find((r) => r.host === alert.host);
    if (!row) return;
    const alerts = (row.alerts || []).filter((a) => a.rule !== alert.rule);
    const firing = [...alerts, alert].filter((a) => a.state === "firing").map((a) => a.rule);
    const moved = { ...row, alerts: [...alerts, alert], attention: "alert", attention_reason: `firing: ${firing.join(", ")}` };
    const others = last.hosts.filter((r) => r !== row);
    const leading = others.filter((r) => r.attention === "alert");
    render({ ...last, hosts: [...leading, moved, ...others.filter((r) => r.attention !== "alert")] });
  }
  return { render, refresh, noteAlert };
}
