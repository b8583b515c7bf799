// The fleet view: one row per host, most urgent first (the server orders them: app/fleet/attention.py),
// with the job's totals above. Shown as the page's front when kvwatch follows more than one host; a
// click on a row opens that host's charts below. Everything from the server is set as text.
import { fetchFleet } from "./api.js";
import { el } from "./dom.js";
import { formatAge, formatDuration } from "./status.js";

const FORMATS = [0, 1, 2].map((digits) => new Intl.NumberFormat("en-US", {
  maximumFractionDigits: digits, minimumFractionDigits: digits }));  // made once: toLocaleString makes one a call
const number = (v, digits = 0) => (v === null || v === undefined ? "–" : FORMATS[digits].format(v));
const eta = (s) => (s === null || s === undefined ? "–" : s === 0 ? "done" : formatDuration(s));

// A row's last 15 minutes as a line (bucket means from /api/fleet's `spark`; a gap stays a gap).
const SVG = "http://www.w3.org/2000/svg";
const HEARD_MS = 10_000;
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
  ["freshest line", (r) => freshness(r)],
];
const FRESHNESS = COLUMNS.length - 1;
const ROW_MARGIN = 15;  // rows displayed beyond each edge of the screen

function differenceText(diff) {
  const entries = Object.entries(diff || {});
  if (!entries.length) return "common";
  return entries.map(([k, v]) => (v === null ? `no --${k}` : v === true ? `--${k}` : `--${k} ${v}`)).join(" ");
}

// The age of the row's newest line, counted here from when it was (`sources_at`, and `fresh_at` from
// the live samples), so it moves every second without the server sending every row every second.
function freshness(r) {
  if (!r.sources_at) {
    const ages = Object.values(r.sources || {}).filter((a) => a !== null && a !== undefined);
    return ages.length ? formatAge(Math.min(...ages)) : "–";
  }
  const stamps = [...Object.values(r.sources_at), r.fresh_at].filter((t) => t !== null && t !== undefined);
  return stamps.length ? formatAge(Math.max(0, Date.now() / 1000 - Math.max(...stamps))) : "–";
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
  let rows = new Map();  // host -> its row as last heard (a whole answer, then the stream's changes)
  let order = [];        // hosts, most urgent first (the server's order)
  let summary = null;    // totals and groups
  // host -> rule -> { alert, at }: alerts the stream said fired that the server's rows have not shown yet.
  // A row read just before the alert was stored must not blank them; the server resends a host's row on
  // alert news, so one not confirmed within HEARD_MS (or resolved meanwhile) gives way to the rows.
  const heard = new Map();
  const drawn = new Map();  // host -> { tr, cells, keys }: the rows on the page, written cell by cell
  // Only the rows near the screen are displayed (a spacer stands for the others): painting the table
  // costs in proportion to the rows it shows, and 256 rows painted each second are most of a frame.
  const inView = new Set();  // rows displayed: their cells are written as changes come, their ages each second
  const stale = new Set();   // hosts whose row changed while not displayed: written when it is
  const spacer = () => el("tr", { class: "fleet-spacer", "aria-hidden": "true" }, el("td", { colspan: String(COLUMNS.length) }));
  const above = spacer();
  const below = spacer();
  let shownRows = [];
  let rowHeight = 0;
  let placing = false;
  const placeSoon = () => {
    if (placing) return;
    placing = true;
    requestAnimationFrame(() => { placing = false; place(); });
  };
  window.addEventListener("scroll", placeSoon, { passive: true });
  window.addEventListener("resize", placeSoon);
  filter.addEventListener("input", arrange);
  body.addEventListener("click", (event) => {
    const row = event.target.closest("tr[data-host]");
    if (row) onPick(row.dataset.host);
  });

  // A whole /api/fleet answer: every row, its order and the totals.
  function render(answer) {
    rows = new Map(answer.hosts.map((r) => [r.host, withHeard(r)]));
    order = answer.hosts.map((r) => r.host);
    summary = answer;
    forget();
    answer.hosts.forEach(write);
    arrange();
    writeTotals();
  }

  // The stream's `fleet` event: only changed rows' changed fields, the order when it moved, the totals
  // when they changed. Before the first whole answer there is nothing to change.
  function apply(change) {
    if (!summary) return;
    for (const part of change.rows || []) {
      const row = withHeard({ ...rows.get(part.host), ...part });
      rows.set(part.host, row);
      const tr = drawn.get(part.host)?.tr;
      if (tr && !inView.has(tr)) stale.add(part.host);  // written when it scrolls into view
      else write(row);
    }
    if (change.order) {
      // A row the page heard start firing (the stream's `alert` event) stays among the alerting rows: an
      // order made from rows read just before the alert was stored must not move it down again.
      const alerting = (host) => rows.get(host)?.attention === "alert";
      order = [...change.order.filter(alerting), ...change.order.filter((host) => !alerting(host))];
      forget();
    }
    if (change.totals) {
      summary = { ...summary, totals: change.totals, groups: change.groups ?? summary.groups };
      writeTotals();
    }
    if (change.order || (filter.value.trim() && change.rows?.length)) arrange();
    tick({ force: true });
  }

  function forget() {
    const known = new Set(order);
    for (const [host, row] of drawn) {
      if (known.has(host)) continue;
      inView.delete(row.tr);
      stale.delete(host);
      drawn.delete(host);
      rows.delete(host);
    }
  }

  function arrange() {
    const needle = filter.value.trim().toLowerCase();
    const shown = order.map((host) => rows.get(host)).filter((r) => r && (!needle || [r.host, r.group,
      r.attention_reason, r.verdict_label, r.run?.id].some((text) => (text || "").toLowerCase().includes(needle))));
    const wanted = shown.map((r) => drawn.get(r.host)?.tr ?? write(r));
    if (wanted.length !== shownRows.length || wanted.some((tr, i) => shownRows[i] !== tr)) {
      body.replaceChildren(above, ...wanted, below);
      shownRows = wanted;
    }
    place();
  }

  // Display the rows from ROW_MARGIN above the screen to ROW_MARGIN below it; hide the rest.
  function place() {
    const measured = shownRows.find((tr) => !tr.hidden)?.offsetHeight;
    if (measured) rowHeight = measured;
    const height = rowHeight || 24;
    const top = body.getBoundingClientRect().top;
    const count = shownRows.length;
    const from = Math.max(0, Math.min(count, Math.floor(-top / height) - ROW_MARGIN));
    const to = Math.max(from, Math.min(count, Math.ceil((window.innerHeight - top) / height) + ROW_MARGIN));
    inView.clear();
    shownRows.forEach((tr, i) => {
      const on = i >= from && i < to;
      if (on) inView.add(tr);
      if (tr.hidden !== on) return;
      tr.hidden = !on;
      const host = tr.dataset.host;
      if (on && stale.delete(host) && rows.has(host)) write(rows.get(host));
    });
    above.firstChild.style.height = `${from * height}px`;
    below.firstChild.style.height = `${(count - to) * height}px`;
  }

  function writeTotals() {
    const groups = Object.entries(summary.groups || {}).map(([name, t]) => `${name}: ${totalsText(t)}`);
    totals.textContent = [totalsText(summary.totals), ...groups].join("  |  ");
  }

  function write(r) {
    let row = drawn.get(r.host);
    if (!row) {
      const cells = COLUMNS.map(() => el("td"));
      row = { tr: el("tr", { "data-host": r.host, "data-testid": "fleet-row", tabindex: "0" }, ...cells), cells,
              keys: COLUMNS.map(() => undefined) };
      drawn.set(r.host, row);
    }
    stale.delete(r.host);
    if (row.tr.dataset.attention !== r.attention) {
      row.tr.dataset.attention = r.attention;
      row.tr.className = `attention-${r.attention}`;
    }
    COLUMNS.forEach((column, i) => writeCell(row, i, column, r));
    return row.tr;
  }

  function writeCell(row, i, [, value, draw], r) {
    const v = value(r);
    const key = draw ? JSON.stringify(v ?? null) : String(v);
    if (row.keys[i] === key) return;
    row.keys[i] = key;
    if (draw) row.cells[i].replaceChildren(draw(v, r));
    else row.cells[i].textContent = v;
  }

  // Each second: the ages in the rows on screen (the others are written when they scroll into view or
  // change). A `fleet` event does it in its own task, so the table is painted once a second, not twice.
  let ticked = -Infinity;
  function tick({ force = false } = {}) {
    if (!force && performance.now() - ticked < 900) return;
    ticked = performance.now();
    for (const tr of inView) {
      const row = drawn.get(tr.dataset.host);
      const r = rows.get(tr.dataset.host);
      if (row && r) writeCell(row, FRESHNESS, COLUMNS[FRESHNESS], r);
    }
  }

  async function refresh() {
    const answer = await fetchFleet();
    render(answer);
    return answer;
  }

  // A row with the alerts heard on the stream that it does not show yet (see `heard`); those it shows are
  // confirmed and forgotten.
  function withHeard(row) {
    const pending = heard.get(row.host);
    if (!pending) return row;
    let alerts = row.alerts || [];
    for (const [rule, { alert, at }] of pending) {
      if (alerts.some((a) => a.rule === rule && a.state === "firing") || performance.now() - at > HEARD_MS) {
        pending.delete(rule);
      } else {
        alerts = [...alerts.filter((a) => a.rule !== rule), alert];
      }
    }
    if (!pending.size) {
      heard.delete(row.host);
      return row;
    }
    const firing = alerts.filter((a) => a.state === "firing").map((a) => a.rule);
    return { ...row, alerts, attention: "alert", attention_reason: `firing: ${firing.join(", ")}` };
  }

  // An alert that fires (the stream's `alert` event, /api/alerts's item) moves its row up at once, before
  // the server's next `fleet` event orders every row: firing alerts lead (app/fleet/attention.py's first
  // rank). Anything else waits for that event.
  function noteAlert(alert) {
    if (alert && alert.state !== "firing") heard.get(alert.host)?.delete(alert.rule);
    const row = alert && alert.state === "firing" ? rows.get(alert.host) : null;
    if (!row) return;
    if (!heard.has(row.host)) heard.set(row.host, new Map());
    heard.get(row.host).set(alert.rule, { alert, at: performance.now() });
    const moved = withHeard(row);
    rows.set(row.host, moved);
    write(moved);
    const others = order.filter((host) => host !== row.host);
    const leading = others.filter((host) => rows.get(host)?.attention === "alert");
    order = [...leading, row.host, ...others.filter((host) => rows.get(host)?.attention !== "alert")];
    arrange();
  }
  return { render, apply, refresh, noteAlert, tick };
}
