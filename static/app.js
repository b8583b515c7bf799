// Wiring: pick a host, load its history, follow the live stream, keep every chart on one time axis.
import { fetchAlerts, fetchDiagnosis, fetchEvents, fetchHosts, fetchRuns, fetchSeries, fetchStatus, openStream } from "./api.js";
import { appendPoints, createChart, extendTrace, extendTraces, lastTime, setMarkers, setTraces, setXRange } from "./charts.js";
import { eventMarkers, runMarkers } from "./markers.js";
import { refreshHostPanels, showHostPanels } from "./hostpanels.js";
import { createNowRow } from "./nowrow.js";
import { PANELS, labelTrace, tracesFor } from "./panels.js";
import { plotlyReady } from "./plotly.js";
import { createAlertBanner, setupNotifyButton } from "./alertbanner.js";
import { renderHostStrip, renderProgress, renderSources, tickFreshness } from "./status.js";
import { setupTheme } from "./theme.js";
import { liveFetch, liveWindow, readLocation, renderRangeButtons, writeLocation } from "./timerange.js";

const $ = (id) => document.getElementById(id);
const state = { host: null, hosts: [], zoom: null, applied: null, latest: {}, progress: null,
                banner: null, extent: [Infinity, -Infinity], loading: null, backfilling: false,
                refillWhenShown: false, range: "all", nowRow: null, runsKey: null };
// The most points a trace keeps in the browser; history beyond it is downsampled by the server.
const CHART_POINTS = 5000;
window.kvwatchZoomFetches = 0;

function throttle(fn, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; fn(); }, ms);
  };
}

function pointsFor(element) {
  return Math.min(4000, Math.max(500, Math.round((element.clientWidth || 800) * 2)));
}

function noteExtent(points) {
  if (!points.length) return;
  state.extent = [Math.min(state.extent[0], points[0][0]), Math.max(state.extent[1], points.at(-1)[0])];
}

// All series of all charts, fetched in parallel: {panelId: [points of trace 0, points of trace 1]}.
async function fetchCharts(window) {
  const out = {};
  const jobs = [];
  for (const panel of PANELS) {
    const element = $(panel.id);
    out[panel.id] = panel.traces.map(() => []);
    panel.traces.forEach((trace, index) => {
      const options = { maxPoints: pointsFor(element), ...(window || {}) };
      jobs.push(fetchSeries(state.host, trace.metric, options).then((series) => {
        out[panel.id][index] = series.points;
        labelTrace(trace, series);
        if (!window || window.until === undefined) noteExtent(series.points);
        if (series.eta !== undefined) state.progress = series.eta;
        if (series.points.length) state.latest[trace.metric] = series.points.at(-1)[1];
      }));
    });
  }
  await Promise.all(jobs);
  return out;
}

async function fillCharts(window) {
  const series = await fetchCharts(window);
  for (const panel of PANELS) setTraces($(panel.id), series[panel.id], panel.traces.map((_, i) => i));
}

// The live view's history: the chosen range at full detail, or everything. A host whose data stopped
// before the range began gets its whole history (the window then ends at its newest point).
async function fetchLive() {
  const window = liveFetch(state.range);
  let series = await fetchCharts(window);
  if (window && !Object.values(series).some((traces) => traces.some((points) => points.length))) {
    series = await fetchCharts(null);
  }
  return series;
}

async function fillLive() {
  const series = await fetchLive();
  for (const panel of PANELS) setTraces($(panel.id), series[panel.id], panel.traces.map((_, i) => i));
}

const currentWindow = () => liveWindow(state.range, state.extent);

// Ranges we set ourselves come back as plotly_relayout events; they must not count as a zoom.
function applyRange(range, exceptId) {
  noteApplied(range);
  for (const panel of PANELS) if (panel.id !== exceptId) setXRange($(panel.id), range);
}

// A rolling window moves every second, so the echo of a range we set can arrive after the next one
// was set: every recently applied range counts as ours, not only the last.
function noteApplied(range) {
  state.applied = range;
  state.recentlyApplied = [...(state.recentlyApplied || []).slice(-31), range];
}

function isApplied(range) {
  const same = (r) => Math.abs(range[0] - r[0]) < 0.01 && Math.abs(range[1] - r[1]) < 0.01;
  return (state.recentlyApplied || []).some(same);
}

function alignLive() {
  const range = currentWindow();
  if (state.zoom || !range) return;
  applyRange(range);
}

async function fetchMarkers() {
  const host = state.host;
  const [runs, events] = await Promise.all([fetchRuns(host), fetchEvents(host)]);
  noteRuns(host, runs);
  const markers = [...runMarkers(runs), ...eventMarkers(events, runs)];
  $("marker-count").textContent = markers.length ? `${markers.length} markers` : "";
  return markers;
}

// The run list as the markers last saw it: when it changed (a run registered after its events went
// by), the panels that list runs follow, whichever event brought the news.
function noteRuns(host, runs) {
  const key = (runs || []).map((r) => `${r.id}/${r.ended_at ?? ""}`).join(",");
  const changed = state.runsKey !== null && state.runsKey !== key && host === state.host;
  if (host === state.host) state.runsKey = key;
  if (changed) onRun();
}

const markerLabels = (index, markers) => index === 0 || markers.length < 8;

async function refreshMarkers() {
  if (!state.host) return;
  const markers = await fetchMarkers();
  PANELS.forEach((panel, i) => setMarkers($(panel.id), markers, { labels: markerLabels(i, markers) }));
}

async function refreshHosts() {
  state.hosts = await fetchHosts();
  const fetchedAt = Date.now() / 1000;
  renderHostStrip($("host-strip"), state.hosts, state.host, pickHost);
  const current = state.hosts.find((h) => h.name === state.host);
  if (current) {
    $("host-state").textContent = current.state;
    $("host-state").className = `badge state-${current.state}`;
    $("host-error").textContent = current.state !== "up" && current.last_error ? current.last_error : "";
    renderSources($("sources"), current, fetchedAt);
    if (current.progress) state.progress = current.progress;
    renderProgress($("progress"), state.progress, state.latest);
  }
}

async function loadHost(host, { fixed = null } = {}) {
  state.host = host;
  state.zoom = fixed;
  state.extent = [Infinity, -Infinity];
  state.latest = {};
  state.runsKey = null;
  state.progress = null;
  pending.clear();  // live points of the host shown before must not land on this one's charts
  $("host-picker").value = host;
  updateLiveBadge();
  showHostPanels(host);
  state.nowRow.clear();
  refreshNow();
  refreshDiagnosis();
  // The history is fetched while plotly.js may still be compiling; drawing waits for both.
  const past = fixed ? fetchCharts({ since: fixed[0], until: fixed[1] }) : fetchLive();
  const [series, markers] = await Promise.all([past, fetchMarkers(), refreshHosts()]);
  await plotlyReady;
  const range = fixed || currentWindow();
  noteApplied(range);
  PANELS.forEach((panel, i) => {
    createChart($(panel.id), panel, { series: series[panel.id], range, markers,
                                      labels: markerLabels(i, markers) });
    $(panel.id).on("plotly_relayout", (event) => onRelayout(panel.id, event));
    // A double-click: back to the live window (plotly's own reset to the first range is off, see charts.js).
    $(panel.id).on("plotly_doubleclick", () => (state.zoom ? backToLive() : alignLive()));
  });
  performance.mark("kvwatch-charts-drawn");
}

function pickHost(host) {
  if (host === state.host) return;
  writeLocation({ host, range: state.range, fixed: null });
  state.loading = loadHost(host);
}

// A range button: back to following live, with a window of that length (or everything).
function pickRange(range) {
  state.range = range;
  state.zoom = null;
  writeLocation({ host: state.host, range, fixed: null });
  renderRangeButtons($("range-picker"), range, pickRange);
  updateLiveBadge();
  catchUp(async () => {
    await fillLive();
    alignLive();
  });
}

// The row of current values: the status answer on load and host change, then the stream's samples.
async function refreshNow() {
  const host = state.host;
  const status = await fetchStatus(host).catch(() => null);
  if (host === state.host) state.nowRow.status(status);
}

async function refreshDiagnosis() {
  const host = state.host;
  const answer = await fetchDiagnosis(host).catch(() => null);
  if (host === state.host) state.nowRow.diagnosis(answer);
}

function rangeOf(event) {
  const a = event["xaxis.range[0]"] ?? event["xaxis.range"]?.[0];
  const b = event["xaxis.range[1]"] ?? event["xaxis.range"]?.[1];
  if (a === undefined || b === undefined) return null;
  return [new Date(a).getTime() / 1000, new Date(b).getTime() / 1000];
}

// A zoom on any chart: every chart follows, and the window is fetched again at full detail.
async function onRelayout(sourceId, event) {
  if (event["xaxis.autorange"]) {
    if (state.zoom) await backToLive();
    else alignLive();  // a double-click while live: back on the shared window, never plotly's own guess
    return;
  }
  const range = rangeOf(event);
  if (!range || isApplied(range)) return;
  state.zoom = range;
  updateLiveBadge();
  writeLocation({ host: state.host, range: state.range, fixed: range });
  applyRange(range, sourceId);
  window.kvwatchZoomFetches += 1;
  await fillCharts({ since: range[0], until: range[1] });
  window.kvwatchZoomDone = window.kvwatchZoomFetches;
}

async function backToLive() {
  state.zoom = null;
  updateLiveBadge();
  writeLocation({ host: state.host, range: state.range, fixed: null });
  await fillLive();
  alignLive();
}

function updateLiveBadge() {
  $("live-badge").textContent = state.zoom ? "paused (zoomed)" : "following live";
  $("back-to-live").hidden = !state.zoom;
}

const fetchRate = throttle(async () => {
  const element = $("chart-completions");
  const since = lastTime(element, 1);
  const series = await fetchSeries(state.host, "completion_rate", { since, maxPoints: 500 });
  if (!state.zoom) extendTrace(element, 1, series.points);
  if (series.eta) state.progress = series.eta;
  renderProgress($("progress"), state.progress, state.latest);
}, 3000);
const throttledHosts = throttle(refreshHosts, 5000);
const throttledMarkers = throttle(refreshMarkers, 1000);

// Live points wait for the next animation frame: every sample that arrives within one frame is drawn
// in one redraw per chart, so a point is on screen one frame after it arrives. A hidden tab gets no
// frames and draws nothing; when it is shown again one frame draws everything it buffered.
const pending = new Map();  // panel id -> Map(trace index -> [[t, v], ...])
let frameRequested = false;
let pendingCount = 0;
window.kvwatchDraws = 0;

function scheduleDraw() {
  if (frameRequested || document.visibilityState === "hidden") return;
  frameRequested = true;
  requestAnimationFrame(drawPending);
}

function drawPending() {
  frameRequested = false;
  if (state.backfilling) return;  // resumed after the backfill, in order
  pendingCount = 0;
  if (state.zoom || !pending.size) {
    pending.clear();
    return;
  }
  const range = currentWindow();
  for (const panel of PANELS) {  // top to bottom: the first charts are on screen first
    const byIndex = pending.get(panel.id);
    if (byIndex) appendPoints($(panel.id), inOrder($(panel.id), byIndex), range, CHART_POINTS);
  }
  pending.clear();
  if (range) {
    noteApplied(range);
    followAxis(range);
  }
  window.kvwatchDraws += 1;
  if (PANELS.some((panel) => traceLength($(panel.id)) >= CHART_POINTS)) compactHistory();
}

// Charts without new points follow the shared time axis too, but at most once a second: their
// range is cosmetic, and a redraw of each in every frame would delay the charts that have news.
// An empty chart follows too: it keeps a date axis on the shared window, never plotly's linear -1..6.
const followAxis = throttle(() => {
  const range = currentWindow();
  if (state.zoom || !range || !$(PANELS[0].id).data) return;
  noteApplied(range);
  for (const panel of PANELS) {
    const axis = $(panel.id).layout?.xaxis;
    const shown = axis?.range?.map((x) => new Date(x).getTime() / 1000);
    if (!shown || Math.abs(shown[1] - range[1]) > 0.5 || Math.abs(shown[0] - range[0]) > 0.5) setXRange($(panel.id), range);
  }
}, 1000);

// A point older than what a trace already ends with came twice (replay and backfill overlap): drop it.
function inOrder(element, byIndex) {
  const out = new Map();
  for (const [index, points] of byIndex) {
    const last = lastTime(element, index);
    out.set(index, last === undefined ? points : points.filter(([t]) => t >= last));
  }
  return out;
}

function traceLength(element) {
  return Math.max(0, ...(element.data || []).map((trace) => trace.x.length));
}

// A chart that reached its bound gets its whole history again, downsampled by the server: the
// browser keeps at most CHART_POINTS a trace, and a zoom fetches a window at full detail.
function compactHistory() {
  catchUp(fillLive);
}

function queueLive(metric, values) {
  for (const { panel, index } of tracesFor(metric)) {
    const byIndex = pending.get(panel.id) || new Map();
    const queued = byIndex.get(index) || [];
    queued.push(...values);
    byIndex.set(index, queued);
    pending.set(panel.id, byIndex);
    pendingCount += values.length;
  }
  // Hidden for long: rather than buffer without end, forget the points and refetch once shown.
  if (pendingCount > CHART_POINTS * PANELS.length) {
    pending.clear();
    pendingCount = 0;
    state.refillWhenShown = true;
  }
}

function onSample({ host, points }) {
  if (host !== state.host) return;
  for (const [metric, values] of Object.entries(points)) {
    if (values.length) {
      state.latest[metric] = values.at(-1)[1];
      state.nowRow.sample(metric, values.at(-1)[1]);
    }
    noteExtent(values);
    if (state.zoom) continue;
    queueLive(metric, values);
    if (metric === "completions") fetchRate();
  }
  scheduleDraw();
  throttledHosts();
  throttledNow();  // the 5-min mean, completions/s and ETA are the server's
}

// Live drawing pauses while `fetch` refills the charts; what arrived meanwhile is drawn after it.
async function catchUp(fetch) {
  if (state.backfilling || !state.host) return;
  state.backfilling = true;
  try {
    await fetch();
  } finally {
    state.backfilling = false;
    scheduleDraw();
  }
}

// The points a trace misses after its last one, from /api/series: after a stream the server could
// not replay (restarted, or away longer than its replay log), and on the stream's first open (what
// was stored between the history fetch and the stream's start).
async function backfill() {
  if (state.zoom) return;
  const jobs = [];
  for (const panel of PANELS) {
    const element = $(panel.id);
    panel.traces.forEach((trace, index) => {
      const since = lastTime(element, index);
      jobs.push(fetchSeries(state.host, trace.metric, { since, maxPoints: CHART_POINTS }).then((series) => {
        const points = since === undefined ? series.points : series.points.filter(([t]) => t > since);
        noteExtent(points);
        return [element, index, points];
      }));
    });
  }
  for (const [element, index, points] of await Promise.all(jobs)) {
    if (points.length) extendTraces(element, new Map([[index, points]]), CHART_POINTS);
  }
  alignLive();
  window.kvwatchBackfills = (window.kvwatchBackfills || 0) + 1;
}

function onHello({ resumed_from: resumedFrom, replayed }) {
  if (!resumedFrom || !replayed) catchUp(backfill);
}

document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "hidden") return;
  if (state.refillWhenShown) {
    state.refillWhenShown = false;
    catchUp(fillLive);
  } else {
    scheduleDraw();
  }
});

function onHostEvent(data) {
  const known = state.hosts.find((h) => h.name === data.host);
  if (known) Object.assign(known, data);
  renderHostStrip($("host-strip"), state.hosts, state.host, pickHost);
  if (data.host === state.host) {
    $("host-state").textContent = data.state;
    $("host-state").className = `badge state-${data.state}`;
  }
}

async function refreshAlerts() {
  state.banner.render(await fetchAlerts());
}

const throttledNow = throttle(refreshNow, 5000);
const throttledDiagnosis = throttle(refreshDiagnosis, 30000);

// An alert changed: the banner and the row's alert state, at once.
function onAlert() {
  refreshAlerts();
  if (state.host) refreshNow();
}

// A server start or failure is a run boundary too; other events (retractions) only mark the charts.
const RUN_EVENTS = new Set(["ready", "crash", "oom", "exception", "watchdog_timeout"]);
function onServerEvent(data) {
  throttledMarkers();
  if (data && (!data.host || data.host === state.host) && RUN_EVENTS.has(data.event)) onRun();
}

// A run started or ended: the markers, the row's config, the compare view's runs, the controller's flags.
const onRun = throttle(() => {
  if (!state.host) return;
  throttledMarkers();
  refreshNow();
  refreshDiagnosis();
  refreshHostPanels(state.host);
}, 1000);

async function main() {
  setupTheme($("theme"));
  setupNotifyButton($("notify"));
  state.banner = createAlertBanner($("alert-banner"), { onChanged: refreshAlerts });
  state.nowRow = createNowRow($("now-row"));
  const wanted = readLocation(location);
  state.range = wanted.range;
  renderRangeButtons($("range-picker"), state.range, pickRange);
  const alerts = refreshAlerts();  // the banner does not wait for plotly.js or the charts
  const picker = $("host-picker");
  state.hosts = await fetchHosts();
  for (const host of state.hosts) picker.add(new Option(host.name, host.name));
  picker.addEventListener("change", () => pickHost(picker.value));
  $("back-to-live").addEventListener("click", () => {
    for (const panel of PANELS) Plotly.relayout($(panel.id), { "xaxis.autorange": true });
  });
  const first = state.hosts.find((h) => h.name === wanted.host) || state.hosts[0];
  if (first) {
    writeLocation({ host: first.name, range: state.range, fixed: wanted.fixed });
    await loadHost(first.name, { fixed: wanted.fixed });
  }
  await alerts;
  openStream({
    hello: onHello, sample: onSample, host: onHostEvent, event: onServerEvent, run: onRun, alert: onAlert,
  }, (streamState) => {
    $("stream-state").textContent = streamState;
    $("stream-state").className = `badge stream-${streamState}`;
  });
  refreshAlerts();  // once more now the stream is open: an alert may have changed while the page loaded
  setInterval(() => tickFreshness($("sources")), 1000);
  setInterval(() => { followAxis(); throttledDiagnosis(); }, 5000);  // a rolling window moves with now even when the host is quiet
  window.kvwatchReady = true;
}

// A page that cannot draw says why (plotly.js missing, API down) instead of staying blank.
main().catch((error) => {
  $("host-error").textContent = `kvwatch: ${error.message}`;
  throw error;
});
