// Everything around the charts: host strip, the three sources with freshness (alerts: alertbanner.js).
import { el } from "./dom.js";
import { catchUpText } from "./hostpanels.js";

const STALE_S = 120;

export function formatAge(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  if (seconds < 90) return `${Math.round(seconds)} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  return `${(seconds / 3600).toFixed(1)} h ago`;
}

export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const h = Math.floor(seconds / 3600);
  const m = Math.round((seconds % 3600) / 60);
  return h ? `${h} h ${m} min` : `${m} min`;
}

function unparsedOf(host) {
  return Object.values(host.sources || {}).reduce((sum, s) => sum + (s.unparsed || 0), 0);
}

export function renderHostStrip(container, hosts, selected, onPick) {
  container.replaceChildren();
  for (const host of hosts) {
    const chip = el("button", { class: `host-chip state-${host.state}`, "data-host": host.name,
                                "aria-pressed": String(host.name === selected), type: "button" });
    chip.append(el("span", { class: "dot" }), el("span", {}, host.name));
    const unparsed = unparsedOf(host);
    if (unparsed) chip.append(el("span", { class: "warn", title: "unparsed lines" }, `${unparsed} unparsed`));
    chip.addEventListener("click", () => onPick(host.name));
    container.append(chip);
  }
}

// One card per source; ages are counted from the moment of the fetch, so they tick between fetches.
export function renderSources(container, host, fetchedAt) {
  container.replaceChildren();
  const sources = host.sources || {};
  const outputs = Object.entries(sources).filter(([key]) => key.startsWith("outputs"));
  const cards = [
    ["server log", sources.server_log ? [["server_log", sources.server_log]] : []],
    ["client log", sources.client_log ? [["client_log", sources.client_log]] : []],
    ["output files", outputs],
  ];
  for (const [title, entries] of cards) {
    const card = el("section", { class: "source", "data-testid": `source-${title.replace(/ /g, "-")}` });
    card.append(el("h3", {}, title));
    if (!entries.length) card.append(el("p", { class: "muted" }, "not configured or not seen yet"));
    for (const [key, source] of entries) {
      const line = el("p", { class: "fresh", "data-age": String(source.last_line_age_s ?? ""),
                             "data-fetched": String(fetchedAt) });
      card.append(el("p", { class: "path", title: source.path }, key.startsWith("outputs:") ? key.slice(8) : source.path));
      card.append(line);
      card.append(el("p", { class: source.unparsed ? "warn" : "muted" },
        `${source.lines} lines · ${source.records} records · ${source.unparsed} unparsed`));
      if (source.missing) card.append(el("p", { class: "warn", "data-testid": "source-missing" }, "file missing"));
      const catchUp = catchUpText(source);
      if (catchUp) card.append(el("p", { class: "catchup", "data-testid": "catchup" }, catchUp));
    }
    if (title === "server log") card.append(...stampOutliers(host.stamps));
    container.append(card);
  }
  tickFreshness(container);
}

// Lines whose stamps were quarantined (ahead of the host's clock, or far behind): app/pipeline/watermark.py.
function stampOutliers(stamps) {
  const count = stamps ? (stamps.future || 0) + (stamps.past || 0) : 0;
  if (!count) return [];
  const last = stamps.last || {};
  return [el("p", { class: "warn", "data-testid": "stamp-outliers",
                    title: `last: ${last.path || last.source} line ${last.line}, stamped ${last.t} (${last.reason})` },
             `${count} lines stamped out of range, not stored`)];
}

export function tickFreshness(container) {
  const now = Date.now() / 1000;
  for (const line of container.querySelectorAll(".fresh")) {
    const age = line.dataset.age === "" ? null : Number(line.dataset.age) + (now - Number(line.dataset.fetched));
    line.textContent = `last line ${formatAge(age)}`;
    line.classList.toggle("stale", age === null || age > STALE_S);
  }
}

export function renderProgress(container, progress, latest) {
  const parts = [];
  if (latest.client_done !== undefined) {
    parts.push(`client ${latest.client_done}${latest.client_total ? ` / ${latest.client_total}` : ""}`);
  }
  if (progress) {
    parts.push(`outputs ${progress.done}${progress.target ? ` / ${progress.target}` : ""}`);
    parts.push(`${(progress.rate_per_s * 60).toFixed(1)} / min`);
    if (progress.eta_s !== null) parts.push(`ETA ${formatDuration(progress.eta_s)}`);
  }
  container.textContent = parts.join(" · ") || "no completions yet";
}
