// Wiring: pick a host, load its history, follow the live stream, keep every chart on one time axis.
import { fetchAlerts, fetchCampaign, fetchCatalog, fetchDiagnosis, fetchEvents, fetchHosts, fetchRuns, fetchSeries, fetchStatus, openStream } from "./api.js";
import { appendPoints, createChart, dropFrom, extendTraces, lastTime, setMarkers, setTraces, setXRange } from "./charts.js";
import { newPoints, sinceLast, withPositions } from "./stamps.js";
import { eventMarkers, runMarkers } from "./markers.js";
import { refreshHostPanels, showHostPanels } from "./hostpanels.js";
import { renderCampaign } from "./campaign.js";
import { setHostCount } from "./compare.js";
import { renderDiagnosis } from "./diagnosis.js";
import { NAMES, setNames } from "./names.js";
import { createNowRow } from "./nowrow.js";
import { PANELS, labelTrace, renderChartSlots, setGpuParts, tracesFor } from "./panels.js";
import { plotlyReady, runPlotly } from "./plotly.js";
import { clearProblem, reportProblem, reported, watched } from "./problems.js";
import { createFleetView } from "./fleet.js";
import { createAlertBanner, setupNotifyButton } from "./alertbanner.js";
import { renderHostStrip, renderProgress, renderSources, tickFreshness } from "./status.js";
import { setupTheme } from "./theme.js";
import { liveFetch, liveWindow, readLocation, renderRangeButtons, writeLocation } from "./timerange.js";

const $ = (id) => document.getElementById(id);
// Everything the page keeps while it runs, in this one object (the functions below say how each part moves).
const state = {
  host: null,                     // the host shown
  hosts: [],                      // /api/hosts's answer, kept current by the stream's `host` events
  range: "all",                   // the range button pressed (timerange.js's RANGES)
  zoom: null,                     // [since, until] while a zoom holds the charts; null: following live
  recentlyApplied: [],            // x ranges the page set itself: their relayout echo is not a zoom
  extent: [Infinity, -Infinity],  // first and last sample time the charts hold
  latest: {},                     // newest value per metric (the progress line)
  progress: null,                 // completions and ETA (/api/series's `eta`, /api/hosts's `progress`)
  runsKey: null,                  // the run list the markers last saw (a change reaches the panels)
  runStarts: new Map(),           // host -> the run starts its rate points were drawn knowing
  rateDrops: 0,                   // how often rate points were dropped to be fetched again (answers older than one are stale)
  fleet: null,                    // the fleet view, when there is more than one host
  events: null,                   // the stream (api.js openStream): follows the host shown
  loading: null,                  // the host load in flight
  starting: true,                 // main() has not finished: the charts are busy
  filling: 0,                     // loads, refills and backfills in flight: live drawing waits
  fillGeneration: 0,              // the newest refill: an older one's answer is dropped
  pending: new Map(),             // panel id -> {since: ms queued, byIndex: Map(trace index -> [[t, v], ...])}
  pendingCount: 0,                // points in `pending`
  frameRequested: false,          // an animation frame is asked for
  following: new Set(),           // panel ids whose x range is behind the shared window
  refillWhenShown: false,         // a hidden tab dropped its buffered points: refetch when shown
  stream: "offline",              // what the stream badge says
  banner: null,                   // alertbanner.js's banner
  nowRow: null,                   // nowrow.js's row
};
// The most points a trace keeps in the browser; history beyond it is downsampled by the server.
const CHART_POINTS = 5000;

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
      // One GPU's line is context beside the host's: a quarter of the detail (every point costs a redraw).
      const maxPoints = trace.rank ? Math.round(pointsFor(element) / 4) : pointsFor(element);
      const options = { maxPoints, rank: trace.rank, ...(window || {}) };
      jobs.push(fetchSeries(state.host, trace.metric, options).then((series) => {
        out[panel.id][index] = series.points;
        if (!trace.rank) labelTrace(trace, series);
        if (!window || window.until === undefined) noteExtent(series.points);
        if (series.eta !== undefined) state.progress = series.eta;
        if (series.points.length && !trace.rank) state.latest[trace.metric] = series.points.at(-1)[1];
      }));
    });
  }
  await Promise.all(jobs);
  return out;
}

function fillCharts(window) {
  return refill(() => fetchCharts(window));
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

function fillLive() {
  return refill(fetchLive);
}

// A refill replaces every chart's traces with history from the server (a zoom, a range button, back to
// live, a chart at its bound). Refills and live drawing never interleave: while one is in flight, live
// points wait in `pending` and are drawn after its last point once it landed. Refills may overlap (a
// zoom while the previous window is still loading): only the newest one's answer is drawn; an older
// answer that lands later is dropped, never drawn over the newer history.

// The charts are aria-busy while history is loading into them (the page's start, a host's load, a
// refill, a backfill): assistive technology reads them once they settled, and the cursor says so.
function setFilling(delta) {
  state.filling += delta;
  $("charts").setAttribute("aria-busy", String(state.starting || state.filling > 0));
}

async function refill(load) {
  const generation = ++state.fillGeneration;
  setFilling(1);
  try {
    const series = await load();
    clearProblem("history");
    if (generation !== state.fillGeneration) return;
    for (const panel of PANELS) setTraces($(panel.id), series[panel.id], panel.traces.map((_, i) => i));
  } catch (error) {
    reportProblem("history", error);
  } finally {
    setFilling(-1);
    scheduleDraw();
  }
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
  if (!range) return;  // "all" before any sample: plotly picks the axis, nothing of ours to recognise
  state.recentlyApplied = [...state.recentlyApplied.slice(-31), range];
}

function isApplied(range) {
  const same = (r) => Math.abs(range[0] - r[0]) < 0.01 && Math.abs(range[1] - r[1]) < 0.01;
  return state.recentlyApplied.some(same);
}

function alignLive() {
  const range = currentWindow();
  if (state.zoom || !range) return;
  applyRange(range);
}

async function fetchMarkers() {
  const host = state.host;
  const [runs, events] = await Promise.all([watched("runs", fetchRuns(host)), watched("events", fetchEvents(host))]);
  if (runs) noteRuns(host, runs);
  const markers = [...runMarkers(runs), ...eventMarkers(events, runs)];
  $("marker-count").textContent = markers.length ? `${markers.length} markers` : "";
  return markers;
}

// The run list as the markers last saw it: when it changed (a run registered after its events went
// by), the panels that list runs follow, whichever event brought the news.
function noteRuns(host, runs) {
  const key = (runs || []).map((r) => `${r.id}/${r.ended_at ?? ""}`).join(",");
  const changed = state.runsKey !== null && state.runsKey !== key && host === state.host;
  if (host === state.host) {
    state.runsKey = key;
    redoRatesFrom(host, runs || []);
  }
  if (changed) onRun();
}

// The completion rate never reaches back across a run start (app/api/derived.py), but an output file's
// lines can be stored before the server log's line that starts the run: rate points drawn from then
// on were computed without that start. When a start is first seen, they are dropped and fetched again.
function redoRatesFrom(host, runs) {
  const starts = runs.map((r) => r.started_at).filter((t) => typeof t === "number");
  const known = state.runStarts.get(host);
  state.runStarts.set(host, new Set(starts));
  const fresh = known ? starts.filter((t) => !known.has(t)) : [];
  if (!fresh.length || state.zoom) return;
  const from = Math.min(...fresh);
  let dropped = false;
  for (const { panel, index } of tracesFor(NAMES.COMPLETION_RATE)) {
    const queued = state.pending.get(panel.id)?.byIndex.get(index);
    if (queued) queued.splice(0, queued.length, ...queued.filter(([t]) => t < from));
    dropped = dropFrom($(panel.id), index, from) || dropped;
  }
  if (!dropped) return;
  state.rateDrops += 1;  // an answer in flight was asked from the old end: it would leave a hole
  fetchRate();
}

const markerLabels = (index, markers) => index === 0 || markers.length < 8;

async function refreshMarkers() {
  if (!state.host) return;
  const markers = await fetchMarkers();
  PANELS.forEach((panel, i) => setMarkers($(panel.id), markers, { labels: markerLabels(i, markers) }));
}

async function refreshHosts() {
  const hosts = await watched("hosts", fetchHosts());
  if (!hosts) return;
  state.hosts = hosts;
  setHostCount(hosts.length);  // the compare view offers the same config on the other hosts
  const fetchedAt = Date.now() / 1000;
  renderHostStrip($("host-strip"), state.hosts, state.host, pickHost);
  const current = state.hosts.find((h) => h.name === state.host);
  if (current) {
    $("host-state").textContent = current.state;
    $("host-state").className = `badge state-${current.state}`;
    $("host-error").textContent = storeProblem(current.store) ||
      (current.state !== "up" && current.last_error ? current.last_error : "");
    renderSources($("sources"), current, fetchedAt);
    if (current.progress) state.progress = current.progress;
    renderProgress($("progress"), state.progress, state.latest);
  }
}

// The database is gone (PostgreSQL): the collectors hold what they read, nothing is lost.
function storeProblem(store) {
  if (!store || store.state === "ok") return "";
  const since = store.since ? ` since ${new Date(store.since * 1000).toLocaleTimeString()}` : "";
  const held = store.held_batches ? `: ${store.held_batches} batch${store.held_batches === 1 ? "" : "es"} held, ` +
    "stored when it is back" : "";
  return `store unreachable${since}${held}`;
}

async function loadHost(host, { fixed = null } = {}) {
  state.host = host;
  if (state.hosts.length > 1) state.events?.follow(host);  // its samples, not the whole fleet's
  state.zoom = fixed;
  state.extent = [Infinity, -Infinity];
  state.latest = {};
  state.runsKey = null;
  state.progress = null;
  state.pending.clear();  // live points of the host shown before must not land on this one's charts
  state.pendingCount = 0;
  state.fillGeneration += 1;  // nor a refill or backfill of it that is still in flight
  $("host-picker").value = host;
  updateLiveBadge();
  showHostPanels(host);
  state.nowRow.clear();
  refreshNow();
  refreshDiagnosis();
  // Live points of this host wait for its charts (drawn after their history, as after a refill).
  setFilling(1);
  try {
    // The history is fetched while plotly.js may still be compiling; drawing waits for both. The catalog
    // says first how many GPUs the host has: the GPU charts get a line for each.
    setGpuParts(await watched("catalog", fetchCatalog(host)));
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
  } finally {
    setFilling(-1);
    scheduleDraw();
  }
  performance.mark("kvwatch-charts-drawn");
}

function pickHost(host) {
  if (host === state.host) return;
  writeLocation({ host, range: state.range, fixed: null });
  state.loading = loadHost(host).catch(reported("history"));
}

// A range button: back to following live, with a window of that length (or everything).
function pickRange(range) {
  state.range = range;
  state.zoom = null;
  writeLocation({ host: state.host, range, fixed: null });
  renderRangeButtons($("range-picker"), range, pickRange);
  updateLiveBadge();
  fillLive().then(alignLive);
}

// The row of current values: the status answer on load and host change, then the stream's samples.
async function refreshNow() {
  const host = state.host;
  const status = await watched("status", fetchStatus(host));
  if (host === state.host) state.nowRow.status(status);
}

async function refreshDiagnosis() {
  const host = state.host;
  const answer = await watched("diagnosis", fetchDiagnosis(host));
  if (host === state.host) state.nowRow.diagnosis(answer);
  if (host === state.host) renderDiagnosis($("diagnosis-panel"), host, answer);
}

async function refreshCampaign() {
  const host = state.host;
  if (!host) return;
  const answer = await watched("campaign", fetchCampaign(host));
  // A host with a controller can be given a campaign: its restart panel is shown (hostpanels.js).
  const canPlan = !$("controller-panel").hidden;
  if (host === state.host) renderCampaign($("campaign-panel"), answer, { host, canPlan, onChanged: refreshCampaign });
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
  await fillCharts({ since: range[0], until: range[1] });
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

// The completion rate is derived by the server, not streamed: fetched from where its line ends.
const fetchRate = throttle(async () => {
  const rate = NAMES.COMPLETION_RATE;
  const drawn = tracesFor(rate);
  const since = drawn.length ? sinceLast($(drawn[0].panel.id), drawn[0].index) : undefined;
  const drops = state.rateDrops;
  const series = await watched("completion rate", fetchSeries(state.host, rate, { since, maxPoints: 500 }));
  if (!series) return;
  if (!state.zoom && series.points.length && drops === state.rateDrops) {  // drawn like the stream's points, never over a refill
    for (const { panel, index } of drawn) queuePoints(panel.id, index, withPositions(series.points));
    scheduleDraw();
  }
  if (series.eta) state.progress = series.eta;
  renderProgress($("progress"), state.progress, state.latest);
}, 3000);
const throttledHosts = throttle(refreshHosts, 5000);

// The stream carries host series only: each GPU's line is fetched from where it ends, every few
// seconds while GPU samples arrive, and drawn like the stream's points. A host whose GPU count
// changed (sampling started after the page loaded) is loaded again with a line per GPU.
const fetchGpuParts = throttle(async () => {
  const host = state.host;
  const catalog = await watched("catalog", fetchCatalog(host));
  if (host !== state.host || state.zoom) return;
  if (catalog && setGpuParts(catalog)) {
    state.loading = loadHost(host).catch(reported("history"));
    return;
  }
  for (const panel of PANELS.filter((p) => p.perGpu)) {
    const element = $(panel.id);
    await Promise.all(panel.traces.map(async (trace, index) => {
      if (!trace.rank) return;
      const since = sinceLast(element, index);
      const series = await watched(`${trace.name} history`,
                                   fetchSeries(host, trace.metric, { since, maxPoints: 500, rank: trace.rank }));
      if (series && host === state.host && !state.zoom && series.points.length) {
        queuePoints(panel.id, index, withPositions(series.points));
      }
    }));
  }
  scheduleDraw();
}, 5000);
const throttledMarkers = throttle(refreshMarkers, 1000);

// Live points wait for animation frames, and each frame redraws ONE chart: the one whose points have
// waited longest (top to bottom on a tie). A plotly redraw is a full recompute of its chart (20-40 ms
// here, several times that on a loaded machine), so drawing every chart with news in one frame kept
// the first chart's pixels, and every stream event behind it, waiting for the last chart; one chart a
// frame puts each on screen as soon as it is drawn. Points that arrive for a chart still queued join
// its next redraw. A hidden tab gets no frames and draws nothing; when it is shown again one pass
// over the charts draws everything it buffered.

function scheduleDraw() {
  if (state.frameRequested || document.visibilityState === "hidden") return;
  state.frameRequested = true;
  requestAnimationFrame(drawPending);
}

function oldestPending() {
  let oldest = null;
  for (const panel of PANELS) {  // panel order: the oldest wins, the upper chart on a tie
    const entry = state.pending.get(panel.id);
    if (entry && (!oldest || entry.since < oldest.entry.since)) oldest = { panel, entry };
  }
  return oldest;
}

function drawPending() {
  state.frameRequested = false;
  if (state.filling) return;  // resumed when the refill landed, after its last point
  if (state.zoom) {
    state.pending.clear();
    state.following.clear();
    state.pendingCount = 0;
    return;
  }
  if (!state.pending.size) {
    followOne();
    return;
  }
  const { panel, entry } = oldestPending();
  state.pending.delete(panel.id);
  state.following.delete(panel.id);  // its redraw moves it onto the shared window
  for (const points of entry.byIndex.values()) state.pendingCount -= points.length;
  const element = $(panel.id);
  const range = currentWindow();
  appendPoints(element, inOrder(element, entry.byIndex), range, CHART_POINTS);
  if (range) noteApplied(range);
  if (traceLength(element) >= CHART_POINTS) {
    compactHistory();
    return;
  }
  if (!state.pending.size && range) followAxis();
  if (state.pending.size || state.following.size) scheduleDraw();
}

// Charts without new points follow the shared time axis too, at most once a second, and one chart
// a frame after the charts with news: their range is cosmetic, and a relayout costs about what a
// redraw does. An empty chart follows too: it keeps a date axis on the shared window, never
// plotly's linear -1..6.

const followAxis = throttle(() => {
  const range = currentWindow();
  if (state.zoom || !range || !$(PANELS[0].id).data) return;
  for (const panel of PANELS) {
    const axis = $(panel.id).layout?.xaxis;
    const shown = axis?.range?.map((x) => new Date(x).getTime() / 1000);
    if (!shown || Math.abs(shown[1] - range[1]) > 0.5 || Math.abs(shown[0] - range[0]) > 0.5) state.following.add(panel.id);
  }
  scheduleDraw();
}, 1000);

function followOne() {
  const panel = PANELS.find((p) => state.following.has(p.id));
  if (!panel) return;
  state.following.delete(panel.id);
  const range = currentWindow();
  if (!range || !$(panel.id).data) return;
  noteApplied(range);
  setXRange($(panel.id), range);
  if (state.following.size) scheduleDraw();
}

// Queued points a trace does not hold yet (replay, backfill or a refill's history overlap the
// stream): stamps.js says which.
function inOrder(element, byIndex) {
  const out = new Map();
  for (const [index, points] of byIndex) out.set(index, newPoints(element, index, points));
  return out;
}

function traceLength(element) {
  return Math.max(0, ...(element.data || []).map((trace) => trace.x.length));
}

// A chart that reached its bound gets its whole history again, downsampled by the server: the
// browser keeps at most CHART_POINTS a trace, and a zoom fetches a window at full detail.
function compactHistory() {
  fillLive();
}

function queuePoints(panelId, index, values) {
  const entry = state.pending.get(panelId) || { since: performance.now(), byIndex: new Map() };
  const queued = entry.byIndex.get(index) || [];
  queued.push(...values);
  entry.byIndex.set(index, queued);
  state.pending.set(panelId, entry);
  state.pendingCount += values.length;
}

function queueLive(metric, values) {
  for (const { panel, index } of tracesFor(metric)) queuePoints(panel.id, index, values);
  // Hidden for long: rather than buffer without end, forget the points and refetch once shown.
  if (state.pendingCount > CHART_POINTS * PANELS.length) {
    state.pending.clear();
    state.pendingCount = 0;
    state.refillWhenShown = true;
  }
}

function onSample({ host, points, stamp_index: stampIndex }) {
  if (host !== state.host) return;
  for (const [metric, stamped] of Object.entries(points)) {
    // Without the server's positions (an older server, the relay) a point is new only when newer.
    const values = stampIndex?.[metric] === undefined ? stamped : withPositions(stamped, stampIndex[metric]);
    if (values.length) {
      state.latest[metric] = values.at(-1)[1];
      state.nowRow.sample(metric, values.at(-1)[1]);
    }
    noteExtent(values);
    if (state.zoom) continue;
    queueLive(metric, values);
    if (metric === NAMES.COMPLETIONS) fetchRate();
    if (metric.startsWith("gpu_")) fetchGpuParts();
  }
  scheduleDraw();
  throttledHosts();
  throttledNow();  // the 5-min mean, completions/s and ETA are the server's
  viewsAfterSamples();
}

// The points a trace misses after its last one, from /api/series: after a stream the server could
// not replay (restarted, or away longer than its replay log), and on the stream's first open (what
// was stored between the history fetch and the stream's start). Live drawing waits for it like for a
// refill; a refill that started meanwhile fetched all of it, so then its answer is dropped.
async function backfill() {
  if (state.zoom || !state.host) return;
  const generation = state.fillGeneration;
  setFilling(1);
  try {
    const jobs = [];
    for (const panel of PANELS) {
      const element = $(panel.id);
      panel.traces.forEach((trace, index) => {
        const options = { since: sinceLast(element, index), maxPoints: CHART_POINTS, rank: trace.rank };
        jobs.push(fetchSeries(state.host, trace.metric, options).then((series) => [element, index, series.points]));
      });
    }
    const answers = await Promise.all(jobs);
    if (generation === state.fillGeneration && !state.zoom) {
      for (const [element, index, answer] of answers) {
        const points = newPoints(element, index, withPositions(answer));
        noteExtent(points);
        if (points.length) extendTraces(element, new Map([[index, points]]), CHART_POINTS);
      }
      alignLive();
    }
  } finally {
    setFilling(-1);
    scheduleDraw();
  }
}

// The stream badge says "live" once a connection's hello was heard and the page holds everything up to
// now: "catching up" while the points the server could not replay are fetched (the first open too).
async function onHello({ resumed_from: resumedFrom, replayed }) {
  if (resumedFrom && replayed) {
    showStream("live");
    return;
  }
  showStream("catching up");
  try {
    await backfill();
    clearProblem("backfill");
  } catch (error) {
    reportProblem("backfill", error);
  } finally {
    if (state.stream === "catching up") showStream("live");  // not when the stream dropped meanwhile
  }
}

function showStream(text) {
  state.stream = text;
  $("stream-state").textContent = text;
  $("stream-state").className = `badge stream-${text.replace(/ /g, "-")}`;
}

document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "hidden") return;
  if (state.refillWhenShown) {
    state.refillWhenShown = false;
    fillLive();
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
  const alerts = await watched("alerts", fetchAlerts());
  if (alerts) state.banner.render(alerts);
}

const throttledNow = throttle(refreshNow, 5000);
const throttledDiagnosis = throttle(refreshDiagnosis, 30000);

// Everything beside the charts that a fresh load would fetch for the host, fetched again: the run
// markers, the row of current values, the diagnosis, the controller (its flags and what-if) and the
// compare view (its runs, and its table when a run's numbers moved), the alerts. The one path for
// "the server says something changed": a run or alert event, a server start or failure, and, at
// most every VIEWS_EVERY_MS, the samples of a run in progress (its steady window and means move with
// them: a view fetched when the run started would say "no decode samples" for good).
function refreshHostViews() {
  refreshAlerts();
  if (!state.host) return;
  refreshMarkers().catch(reported("events"));
  refreshNow();
  refreshDiagnosis();
  refreshCampaign();
  refreshHostPanels(state.host);
}
const VIEWS_EVERY_MS = 10000;
const onRun = throttle(refreshHostViews, 1000);
const viewsAfterSamples = throttle(refreshHostViews, VIEWS_EVERY_MS);

// A server start or failure is a run boundary too; other events (retractions) only mark the charts.
const RUN_EVENTS = new Set(["ready", "crash", "oom", "exception", "watchdog_timeout"]);
function onServerEvent(data) {
  throttledMarkers();
  if (data && (!data.host || data.host === state.host) && RUN_EVENTS.has(data.event)) onRun();
}

// More than one host: the fleet's rows lead the page, and a row opens its host below. Kept live by the
// stream's `fleet` events (at most one a second, only what changed, whatever the number of hosts).
function showFleet(picker) {
  const section = $("fleet-view");
  section.hidden = false;
  state.fleet = createFleetView(section, { onPick: (host) => {
    picker.value = host;
    pickHost(host);
    $("host-strip").scrollIntoView({ block: "start" });
  } });
  return watched("fleet", state.fleet.refresh());
}
// At once when idle, then at most once a second: an alert's news reaches the table without waiting.
const refreshFleet = leadingThrottle(() => (state.fleet ? watched("fleet", state.fleet.refresh()) : null), 1000);

function leadingThrottle(fn, ms) {
  let last = -Infinity;
  let timer = null;
  return () => {
    if (timer) return;
    const wait = last + ms - performance.now();
    if (wait <= 0) {
      last = performance.now();
      fn();
      return;
    }
    timer = setTimeout(() => { timer = null; last = performance.now(); fn(); }, wait);
  };
}

const PLOTLY_AFTER_MS = 3000;
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const catalog = fetchCatalog();  // the charts to build, fetched beside the hosts
  setupTheme($("theme"));
  setupNotifyButton($("notify"));
  state.banner = createAlertBanner($("alert-banner"), { onChanged: refreshAlerts });
  const wanted = readLocation(location);
  state.range = wanted.range;
  renderRangeButtons($("range-picker"), state.range, pickRange);
  const alerts = refreshAlerts();  // the banner does not wait for plotly.js or the charts
  const picker = $("host-picker");
  const [hosts, { charts, metrics, names }] = await Promise.all([fetchHosts(), catalog]);
  setNames(names);  // before the now row, which shows status fields by these names
  state.nowRow = createNowRow($("now-row"));
  renderChartSlots($("charts"), charts, metrics);
  state.hosts = hosts;
  setHostCount(hosts.length);
  for (const host of state.hosts) picker.add(new Option(host.name, host.name));
  picker.addEventListener("change", () => pickHost(picker.value));
  $("back-to-live").addEventListener("click", () => {
    for (const panel of PANELS) Plotly.relayout($(panel.id), { "xaxis.autorange": true });
  });
  if (state.hosts.length > 1) {
    // plotly.js's first run is one long task: the fleet's rows are drawn and painted before it (after
    // PLOTLY_AFTER_MS at most, should the fleet not answer), the first host's charts after it.
    const painted = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    const rowsOrLate = Promise.race([showFleet(picker).then(painted), delay(PLOTLY_AFTER_MS)]);
    rowsOrLate.then(runPlotly);
  } else {
    runPlotly();
  }
  const first = state.hosts.find((h) => h.name === wanted.host) || state.hosts[0];
  if (first) {
    writeLocation({ host: first.name, range: state.range, fixed: wanted.fixed });
    await loadHost(first.name, { fixed: wanted.fixed });
  } else {
    $("host-panels").setAttribute("aria-busy", "false");  // no host: no panels to draw
  }
  await alerts;
  // The fleet view is read whole once the stream is open (nothing falls between the two), and again
  // when the stream could not replay what it missed; in between the server's `fleet` events change it.
  const fleetAfterHello = (hello) => { if (!(hello.resumed_from && hello.replayed)) refreshFleet(); };
  state.events = openStream({
    hello: (data) => { fleetAfterHello(data); onHello(data); }, sample: onSample, host: onHostEvent,
    event: onServerEvent, run: onRun, alert: (data) => { state.fleet?.noteAlert(data); onRun(data); },
    fleet: (data) => state.fleet?.apply(data),
  }, (streamState) => {
    if (streamState !== "live") showStream(streamState);  // an open stream is live once its hello is heard
  }, { samplesOf: state.hosts.length > 1 ? state.host : null });
  refreshAlerts();  // once more now the stream is open: an alert may have changed while the page loaded
  setInterval(() => { tickFreshness($("sources")); state.fleet?.tick(); }, 1000);
  setInterval(() => { followAxis(); throttledDiagnosis(); refreshCampaign(); }, 5000);  // a rolling window moves with now even when the host is quiet
}

// A page that cannot draw says why (plotly.js missing, API down) instead of staying blank. Either way
// the start is over: the charts are no longer busy.
main().catch((error) => {
  $("host-error").textContent = `kvwatch: ${error.message}`;
  throw error;
}).finally(() => {
  state.starting = false;
  setFilling(0);
});
