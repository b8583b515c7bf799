// The time window the charts show, and the URL that holds it: `?host=H&range=1h` follows live (a
// rolling window ending now), `?host=H&from=T&to=T` is a fixed window (epoch seconds, epoch ms or ISO),
// as the alert links build them. A link restores both.

export const RANGES = { "15m": 900, "1h": 3600, "6h": 21600, "24h": 86400, all: null };
export const DEFAULT_RANGE = "all";

// Epoch seconds from "1764771200", "1764771200123" (ms) or ISO ("2026-12-03T14:00:00", naive = UTC).
export function parseTime(text) {
  if (text === null || text === undefined || text === "") return null;
  const trimmed = String(text).trim();
  if (/^-?\d+(\.\d+)?$/.test(trimmed)) {
    const number = Number(trimmed);
    return number > 1e11 ? number / 1000 : number;
  }
  const zoned = /[zZ]|[+-]\d\d:?\d\d$/.test(trimmed) || !trimmed.includes("T") ? trimmed : `${trimmed}Z`;
  const ms = Date.parse(zoned);
  return Number.isNaN(ms) ? null : ms / 1000;
}

// {host, range, fixed: [from, to] | null} from the address (`#host=` of older links still works).
export function readLocation(location) {
  const query = new URLSearchParams(location.search);
  const hash = new URLSearchParams(location.hash.slice(1));
  const host = query.get("host") || hash.get("host") || null;
  const range = Object.hasOwn(RANGES, query.get("range")) ? query.get("range") : DEFAULT_RANGE;
  const from = parseTime(query.get("from"));
  const to = parseTime(query.get("to"));
  const fixed = from !== null && to !== null && to > from ? [from, to] : null;
  return { host, range, fixed };
}

export function writeLocation({ host, range, fixed }) {
  const query = new URLSearchParams();
  if (host) query.set("host", host);
  if (fixed) {
    query.set("from", String(Math.floor(fixed[0])));
    query.set("to", String(Math.ceil(fixed[1])));
  } else if (range && range !== DEFAULT_RANGE) {
    query.set("range", range);
  }
  history.replaceState(null, "", `${location.pathname}?${query}`);
}

// The live window: `all` is everything the charts hold; a range ends now (or at the newest point
// when the host's data stopped before the window began) and moves with it.
export function liveWindow(range, extent, now = Date.now() / 1000) {
  const seconds = RANGES[range];
  if (!seconds) return Number.isFinite(extent[0]) ? [...extent] : null;
  const newest = Number.isFinite(extent[1]) ? extent[1] : now;
  const end = newest > now - seconds ? Math.max(now, newest) : newest;
  return [end - seconds, end];
}

// What to fetch for the live view: a range needs only its window; `all` the whole history.
export function liveFetch(range, now = Date.now() / 1000) {
  const seconds = RANGES[range];
  return seconds ? { since: now - seconds } : null;
}

export function renderRangeButtons(container, current, onPick) {
  container.replaceChildren();
  for (const key of Object.keys(RANGES)) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = key;
    button.className = "range";
    button.setAttribute("data-testid", `range-${key}`);
    button.setAttribute("aria-pressed", String(key === current));
    button.addEventListener("click", () => onPick(key));
    container.append(button);
  }
}
