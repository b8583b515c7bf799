// Talking to the kvwatch API: plain fetch for history, one EventSource for everything live.

// A browser keeps six connections to one origin, and the live stream holds one of them: requests
// that never answer (a host's helper stuck, a server under load) would take the other five and leave
// every later fetch of a long-open tab queued for good, while the stream kept its charts moving. No
// request waits longer than this; the caller sees an error and asks again later.
const REQUEST_TIMEOUT_MS = 30_000;

async function request(path, init = {}) {
  try {
    return await fetch(path, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (error) {
    if (error.name === "TimeoutError") throw new Error(`${path}: no answer in ${REQUEST_TIMEOUT_MS / 1000} s`);
    throw error;
  }
}

// An answer that is not 2xx, with the server's `detail` (a 404's "unknown host 'gpu9'").
export class HttpError extends Error {
  constructor(path, status, detail) {
    super(`${path}: HTTP ${status}${detail ? ` ${detail}` : ""}`);
    this.path = path;
    this.status = status;
    this.detail = detail;
  }
}

async function httpError(path, response) {
  let detail = "";
  try {
    const body = await response.json();
    detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? "");
  } catch {
    detail = response.statusText;
  }
  return new HttpError(path, response.status, detail);
}

// Every GET of the page: a 404 or any other failure throws; the caller shows it (problems.js).
export async function getJSON(path) {
  const response = await request(path);
  if (!response.ok) throw await httpError(path, response);
  return response.json();
}

export function fetchHosts() {
  return getJSON("/api/hosts");
}

export function fetchSeries(host, metric, { since, until, maxPoints = 2000, rank } = {}) {
  const query = new URLSearchParams({ host, metric, max_points: String(Math.round(maxPoints)) });
  if (since !== undefined && since !== null) query.set("since", String(since));
  if (until !== undefined && until !== null) query.set("until", String(until));
  if (rank) query.set("rank", rank);
  return getJSON(`/api/series?${query}`);
}

// The metric catalog and the page's `charts`; with a host, `host_metrics` too: what each of the
// host's series combines (how many GPUs).
export function fetchCatalog(host) {
  return getJSON(host ? `/api/catalog?${new URLSearchParams({ host })}` : "/api/catalog");
}

export function fetchRuns(host) {
  return getJSON(`/api/runs?${new URLSearchParams({ host })}`);
}

// The same config's newest run on each other host (GET /api/runs/{id}/alike).
export function fetchAlike(runId) {
  return getJSON(`/api/runs/${encodeURIComponent(runId)}/alike`);
}

export function fetchEvents(host) {
  return getJSON(`/api/events?${new URLSearchParams({ host, kind: "event" })}`);
}

export function fetchAlerts() {
  return getJSON("/api/alerts");
}

function isNewer(id, last) {
  if (!last) return true;
  const [epoch, seq] = id.split("-");
  const [lastEpoch, lastSeq] = last.split("-");
  return epoch !== lastEpoch || Number(seq) > Number(lastSeq);
}

// One EventSource for everything live. Every event has an id; on a blip the browser reconnects by
// itself with Last-Event-ID and the server replays what was missed. A stream the browser gave up on
// (an HTTP error while the server restarts) is reopened here, resuming from the last id it saw.
// `samplesOf`: the host whose `sample` events the page wants (a fleet's page charts one host; the
// others reach it as `fleet` events); `follow(host)` reopens the stream for another, resuming from the
// last id, so what the new host sent meanwhile is replayed.
export function openStream(handlers, onState, { reopenMs = 2000, samplesOf = null } = {}) {
  let lastId = null;
  let source = null;
  let closing = false;
  let samplesHost = samplesOf;
  const url = () => {
    const query = new URLSearchParams();
    if (lastId) query.set("last_event_id", lastId);
    if (samplesHost) query.set("samples_of", samplesHost);
    return query.size ? `/api/stream?${query}` : "/api/stream";
  };
  const open = () => {
    source = new EventSource(url());
    source.onopen = () => onState("live");
    source.onerror = () => {
      onState("reconnecting");
      if (source.readyState === EventSource.CLOSED && !closing) setTimeout(open, reopenMs);
    };
    for (const [event, handler] of Object.entries(handlers)) {
      source.addEventListener(event, (message) => {
        if (message.lastEventId) {
          // A reconnect may replay an event this page already handled (its id was not yet seen when
          // the stream dropped): ids are `<epoch>-<seq>`, so one at or below the last is skipped.
          const newer = isNewer(message.lastEventId, lastId);
          if (!newer && event !== "hello") return;  // hello opens every connection: always heard
          if (newer) lastId = message.lastEventId;
        }
        handler(JSON.parse(message.data), message.lastEventId);
      });
    }
  };
  open();
  window.addEventListener("beforeunload", () => { closing = true; source.close(); });
  const follow = (host) => {
    if (host === samplesHost || closing) return;
    samplesHost = host;
    source.close();
    open();
  };
  return { close: () => { closing = true; source.close(); }, follow, get source() { return source; } };
}

const hostPath = (host, what) => `/api/hosts/${encodeURIComponent(host)}/${what}`;

// The host now in one answer: newest values, 5-min mean, completions, ETA, run and its defining flags, alerts.
export function fetchFleet() {
  return getJSON("/api/fleet");
}

export function fetchStatus(host) {
  return getJSON(hostPath(host, "status"));
}

export function fetchDiagnosis(host) {
  return getJSON(hostPath(host, "diagnosis"));
}

// The controller's view: launch flags, presets, vetoes and `current` (what the server runs now); null
// for a host without `launch`, which has no controller. The API answers that state with a 404 (as it
// answers an unknown host, which the page does not ask about: its hosts are /api/hosts's), so this one
// 404 is the declared "no controller"; any other failure throws.
export async function fetchController(host) {
  const path = hostPath(host, "controller");
  const response = await request(path);
  if (response.status === 404) return null;
  if (!response.ok) throw await httpError(path, response);
  return response.json();
}

// The host's latest tuning campaign (plan with predictions, steps, final table, prices); null when the
// host never had one, or has no controller: the API's declared absence for both is a 404.
export async function fetchCampaign(host) {
  const path = `/api/campaign/${encodeURIComponent(host)}`;
  const response = await request(path);
  if (response.status === 404) return null;
  if (!response.ok) throw await httpError(path, response);
  return response.json();
}

// plan, start, pause, resume or stop the host's campaign (the control token, as a restart needs).
export function postCampaign(host, action, body, token) {
  return postJSON(`/api/campaign/${encodeURIComponent(host)}/${action}`, body, { Authorization: `Bearer ${token}` });
}

// Every flag of the host's sglang (names, defaults, choices).
export function fetchFlagOptions(host) {
  return getJSON(hostPath(host, "flags"));
}

// The current or last restart's progress (the panel polls it while a restart runs).
export function fetchRestartStatus(host) {
  return getJSON(hostPath(host, "restart"));
}

// A restart request; `expectedRun` is the run the tab based its diff on (409 when it is no longer current).
export async function postRestart(host, { flags, expectedRun, token }) {
  const response = await request(hostPath(host, "restart"), {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify({ flags, expected_run: expectedRun ?? null }),
  });
  const text = await response.text();
  let answer;
  try { answer = JSON.parse(text); } catch { answer = { detail: text }; }
  return { status: response.status, statusText: response.statusText, answer };
}

async function postJSON(path, body, headers = {}) {
  const response = await request(path, {
    method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body),
  });
  const text = await response.text();
  let answer;
  try { answer = JSON.parse(text); } catch { answer = { detail: text }; }
  return { status: response.status, answer };
}

// What `flags` (changes on top of the running config; null drops one) would give: KV tokens,
// running requests, gen tok/s and risks. Changes nothing, needs no token.
export function postPredict(host, flags) {
  return postJSON(hostPath(host, "predict"), { flags });
}

// A restart body's problems flag by flag (invalid, guarded, vetoed), before anything is confirmed.
export function postRestartCheck(host, flags) {
  return postJSON(hostPath(host, "restart/check"), { flags });
}

// Predictions kept with restarts, next to what each new run measured, and the relative errors.
export function fetchPredictions(host) {
  return getJSON(hostPath(host, "predictions"));
}

// Acknowledge, mute (for `forS` seconds) or unmute one alert; the token is the restart panel's.
export function postAlertAction(host, rule, action, { token, forS } = {}) {
  const path = `/api/alerts/${encodeURIComponent(host)}/${encodeURIComponent(rule)}/${action}`;
  return postJSON(path, forS ? { for_s: forS } : {}, { Authorization: `Bearer ${token}` });
}

// The compare view: its query (runs, baseline, windows, format, ...) as URLSearchParams.
export function compareURL(query) {
  return `/api/compare?${query}`;
}

// The table as JSON, with the server's reason when it cannot answer (422: a window too short, ...).
export async function fetchCompare(query) {
  const response = await request(compareURL(query));
  const text = await response.text();
  let answer;
  try { answer = JSON.parse(text); } catch { answer = { detail: text }; }
  return { ok: response.ok, status: response.status, answer };
}

// The table as text (format=markdown or csv).
export async function fetchCompareText(query) {
  const response = await request(compareURL(query));
  if (!response.ok) throw await httpError(compareURL(query), response);
  return response.text();
}
