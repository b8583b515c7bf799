// The controller panel of one host: flags that run now, presets (vetoed ones disabled with the reason),
// the editor, the diff, a token kept in sessionStorage only, a confirmation, then live progress.
import {
  fetchController, fetchFlagOptions, fetchPredictions, fetchRestartStatus, fetchStatus, postPredict, postRestart,
  postRestartCheck,
} from "./api.js";
import { el } from "./dom.js";
import { diffFlags, FlagEditor, fmt, renderDiff } from "./flageditor.js";
import { renderPresets } from "./presets.js";
import { reported, watched } from "./problems.js";
import { changesOf, renderAccuracy, renderPrediction } from "./whatif.js";

const TOKEN_KEY = "kvwatch-token";  // sessionStorage only: never the URL, never localStorage
// `current`: the flags the server runs now (the diff's base); `basedOn`: the run they belong to, sent as
// `expected_run` so a restart planned on a stale view is refused (409) instead of run.
// `assessing`: the pending prediction + dry-run check of the editor's flags; `problems`: what that check found.
const state = { host: null, view: null, editor: null, preset: null, polling: null, current: {}, basedOn: null,
                assessing: Promise.resolve(), assessDone: null, assessTimer: null, problems: [], seq: 0, idle: null };
const ASSESS_DELAY_MS = 300;
const IDLE_REFRESH_MS = 10_000;
const UNREAD = "could not read the server's flags";

export async function showController(root, host) {
  state.host = host;
  clearInterval(state.polling);
  const view = await fetchController(host);
  if (view === null || host !== state.host) {  // null: 404, the host has no `launch`
    if (host === state.host) root.replaceChildren();
    root.hidden = true;
    return;
  }
  root.hidden = false;
  // Without the schema the editor still edits the flags, as text.
  const flags = (await watched("flag schema", fetchFlagOptions(host))) || { options: [] };
  if (host !== state.host) return;
  state.view = view;
  state.current = currentFlags(view);
  state.preset = null;
  render(root, view, flags.options || []);
  state.basedOn = await currentRun(host, view);
  if (view.busy) follow(root);
  // What runs on the host can change without a run event (a server adopted, one that died): look again.
  clearInterval(state.idle);
  state.idle = setInterval(async () => {
    // one look at a time: a slow answer is not asked for again while it is still on its way
    if (state.looking || document.hidden || root.querySelector("#ctl-progress").dataset.done === "false") return;
    state.looking = true;
    const error = root.querySelector("#ctl-error");
    try {
      await refreshController(root, host);
      if (error.textContent.startsWith(UNREAD)) error.textContent = "";
    } catch (failure) {
      error.textContent = `${UNREAD}: ${failure.message}`;
    } finally {
      state.looking = false;
    }
  }, IDLE_REFRESH_MS);
}

// What the server runs now: `running_flags` when the server answers with them (a server the
// controller did not start, read from its log; null while the controller's own server runs), else the
// controller's record, else the launch line.
function currentFlags(view) {
  return view.running_flags || (view.current && view.current.flags) || (view.launch && view.launch.flags) || {};
}

// The run the server runs now, by the id the restart's `expected_run` is checked against: the run
// registry's (`view.run`); else the controller's record, else the host's newest run. (An adopted
// server's record says `adopted-<pid>`, which is no run id of the registry's: sending it was a 409.)
async function currentRun(host, view) {
  if (view.run && view.run.id) return view.run.id;
  if (view.current && view.current.run_id) return view.current.run_id;
  const status = await watched("status", fetchStatus(host));
  return status && status.run ? status.run.id : null;
}

// What the server says about the host beside its flags (the demo: a person's restart stopped its story).
function noticeText(view) {
  return view.notice ? view.notice.message : "";
}

function summary(view) {
  const current = currentFlags(view);
  const count = `runs now: ${Object.keys(current).length} flags`;
  if (view.running_flags && view.run) {
    return `${count} · run ${view.run.id}, read from its log (not started by kvwatch)`;
  }
  return count + (view.current ? ` · ${view.current.running ? "running" : "not running"}` +
                                 (view.current.run_id ? ` · run ${view.current.run_id}` : "") : "");
}

// The server's flags again (a run started, or the user is about to confirm): the summary and the diff's
// base follow; an editor the user has not touched follows too.
async function takeCurrent(root, view) {
  const before = state.current;
  const untouched = state.editor && JSON.stringify(state.editor.flags) === JSON.stringify(before) && !state.preset;
  state.view = view;
  state.current = currentFlags(view);
  state.basedOn = await currentRun(state.host, view);
  root.querySelector("#ctl-current summary").textContent = summary(view);
  root.querySelector("#ctl-notice").textContent = noticeText(view);
  root.querySelector("#ctl-current pre").textContent =
    Object.entries(state.current).map(([k, v]) => `--${k} ${fmt(v)}`).join("\n");
  if (untouched) state.editor.set(state.current);
  renderDiff(root.querySelector("#ctl-diff"), diffFlags(state.current, state.editor.flags));
  // Asked again when what it rests on changed: the flags, or the run whose capacity and workload it
  // reads (a new run logs its KV capacity seconds after it starts; until then the answer is "unknown").
  if (JSON.stringify(before) !== JSON.stringify(state.current) || state.predictionIncomplete) scheduleAssess(root);
  showAccuracy(root);
}

// The prediction and the per-flag check of the editor's flags, a moment after the last edit; an older
// answer arriving late is dropped (`seq`). Confirming waits for it (`state.assessing`).
function scheduleAssess(root) {
  clearTimeout(state.assessTimer);
  root.querySelector("#ctl-prediction").dataset.state = "pending";
  if (!state.assessDone) state.assessing = new Promise((resolve) => { state.assessDone = resolve; });
  state.assessTimer = setTimeout(async () => {
    if (!(await assess(root).catch(() => true))) return;  // a newer assessment is under way: it resolves
    const done = state.assessDone;
    state.assessDone = null;
    if (done) done();
  }, ASSESS_DELAY_MS);
}

async function assess(root) {
  const seq = ++state.seq;
  const host = state.host;
  const changes = changesOf(diffFlags(state.current, state.editor.flags));
  const [predicted, checked] = await Promise.all([
    postPredict(host, changes).catch((error) => ({ status: 0, answer: { detail: error.message } })),
    postRestartCheck(host, requestFlags(state.view)).catch(() => ({ status: 0, answer: {} })),
  ]);
  if (seq !== state.seq || host !== state.host) return false;
  renderPrediction(root.querySelector("#ctl-prediction"), predicted.answer, predicted.status);
  state.predictionIncomplete = predicted.status !== 200 || (predicted.answer.risks || []).some((r) => r.kind === "unknown");
  state.problems = checked.status === 200 ? checked.answer.problems || [] : [];
  state.editor.mark(state.problems);
  root.querySelector("#ctl-problems").textContent = state.problems.length
    ? `not allowed: ${state.problems.map((p) => `--${p.flag} (${p.kind})`).join(", ")}; change or remove it to restart`
    : "";
  root.querySelector("#ctl-review").disabled = state.problems.length > 0;
  if (state.problems.length) root.querySelector("#ctl-confirm").hidden = true;
  return true;
}

async function showAccuracy(root) {
  const host = state.host;
  const answer = await watched("predictions", fetchPredictions(host));
  if (host === state.host && answer) renderAccuracy(root.querySelector("#ctl-accuracy"), answer);
}

// A suggestion of the diagnosis panel: `changes` (null drops a flag) laid over the flags that run now, in the
// editor; the diff and the prediction follow as after an edit. It never restarts. False: no editor for `host`.
export function fillEditor(host, changes) {
  if (host !== state.host || !state.editor || !state.redraw) return false;
  const flags = { ...state.current, ...changes };
  for (const [name, value] of Object.entries(changes)) if (value === null) delete flags[name];
  state.preset = null;
  state.editor.set(flags);
  state.redraw();
  state.editor.container.scrollIntoView({ block: "nearest" });
  return true;
}

export async function refreshController(root, host) {
  if (host !== state.host || root.hidden || !state.editor) return;
  const view = await fetchController(host);  // a failure is the caller's to show
  if (!view || host !== state.host) return;
  await takeCurrent(root, view);
  if (view.busy && root.querySelector("#ctl-progress").hidden) follow(root);
}

function render(root, view, options) {
  const current = state.current;
  const $ = (id) => root.querySelector(`#${id}`);
  root.replaceChildren(
    el("h2", { text: `controller · ${view.host}` }),
    el("p", { class: "error", id: "ctl-error", "data-testid": "ctl-error", text: view.error || "" }),
    el("p", { class: "muted", id: "ctl-notice", "data-testid": "ctl-notice", text: noticeText(view) }),
    el("details", { id: "ctl-current", "data-testid": "ctl-current" },
      el("summary", { text: summary(view) }),
      el("pre", { text: Object.entries(current).map(([k, v]) => `--${k} ${fmt(v)}`).join("\n") })),
    el("div", { class: "ctl-grid" },
      el("div", {},
        el("h3", { text: "preset (applied on top of the flags that run now)" }),
        el("div", { id: "ctl-presets", "data-testid": "ctl-presets", class: "presets" }),
        el("p", { id: "ctl-effect", "data-testid": "ctl-effect", class: "muted" })),
      el("div", {},
        el("h3", { text: "flags of the next run" }),
        el("div", { id: "ctl-editor", "data-testid": "ctl-editor" }),
        el("div", { id: "ctl-search-slot" })),
      el("div", {},
        el("h3", { text: "what changes" }),
        el("div", { id: "ctl-diff", "data-testid": "ctl-diff" }),
        el("h3", { text: "predicted for the next run" }),
        el("div", { id: "ctl-prediction", "data-testid": "ctl-prediction", class: "ctl-prediction" }),
        el("p", { id: "ctl-problems", "data-testid": "ctl-problems", class: "error" }),
        el("label", {}, "token ", el("input", { type: "password", id: "ctl-token", "data-testid": "ctl-token",
                                               autocomplete: "off" })),
        el("div", { class: "ctl-actions" },
          el("button", { type: "button", id: "ctl-review", "data-testid": "ctl-review", text: "restart…" }),
          el("span", { id: "ctl-confirm", "data-testid": "ctl-confirm", hidden: true },
            el("span", { id: "ctl-confirm-text" }), " ",
            el("button", { type: "button", id: "ctl-go", "data-testid": "ctl-go", class: "danger", text: "confirm restart" }),
            el("button", { type: "button", id: "ctl-cancel", "data-testid": "ctl-cancel", text: "cancel" }))))),
    el("div", { id: "ctl-progress", "data-testid": "ctl-progress", class: "ctl-progress", hidden: true },
      el("p", {}, "restart: ", el("strong", { id: "ctl-state", "data-testid": "ctl-state" }),
        " ", el("span", { id: "ctl-outcome", "data-testid": "ctl-outcome" })),
      el("ol", { id: "ctl-steps", "data-testid": "ctl-steps" }),
      el("pre", { id: "ctl-log", "data-testid": "ctl-log", class: "log-tail" })),
    el("details", { id: "ctl-accuracy-box", open: true },
      el("summary", { text: "predictions vs what the runs measured" }),
      el("div", { id: "ctl-accuracy", "data-testid": "ctl-accuracy" })));
  const diff = () => {
    renderDiff($("ctl-diff"), diffFlags(state.current, state.editor.flags));
    scheduleAssess(root);
  };
  state.redraw = diff;
  state.editor = new FlagEditor($("ctl-editor"), options, diff);
  state.editor.set(current);
  $("ctl-search-slot").replaceWith(state.editor.searchBox());
  diff();
  renderPresets(root.querySelector("#ctl-presets"), root.querySelector("#ctl-effect"), view, {
    current: () => state.current,
    pick: (preset) => {
      state.preset = preset ? preset.name : null;
      state.editor.set(preset ? { ...state.current, ...preset.flags } : state.current);
      diff();
    },
  });
  const token = $("ctl-token");
  token.value = sessionStorage.getItem(TOKEN_KEY) || "";
  token.addEventListener("input", () => sessionStorage.setItem(TOKEN_KEY, token.value));
  $("ctl-review").addEventListener("click", () => review(root));
  $("ctl-cancel").addEventListener("click", () => { $("ctl-confirm").hidden = true; });
  $("ctl-go").addEventListener("click", () => restart(root));
  showAccuracy(root);
}

// The diff confirmed is against what the server runs now: the question shows at once, and its confirm
// button waits until the server's flags have been fetched again and the diff redrawn against them.
function askConfirm(root) {
  const d = diffFlags(state.current, state.editor.flags);
  const n = d.added.length + d.changed.length + d.removed.length;
  root.querySelector("#ctl-confirm-text").textContent =
    `restart ${state.host} with ${n} change${n === 1 ? "" : "s"}${state.preset ? ` (preset ${state.preset})` : ""}?`;
  root.querySelector("#ctl-confirm").hidden = false;
}

async function review(root) {
  const host = state.host;
  const go = root.querySelector("#ctl-go");
  go.disabled = true;
  askConfirm(root);
  try {
    const view = await fetchController(host);
    if (host !== state.host) return;
    if (view) await takeCurrent(root, view);
    await state.assessing;
    if (state.problems.length) {
      root.querySelector("#ctl-confirm").hidden = true;
      return;
    }
    askConfirm(root);
  } catch (error) {
    root.querySelector("#ctl-error").textContent = `${UNREAD}: ${error.message}`;
  } finally {
    go.disabled = false;
  }
}

// The request lays `flags` over the launch flags, so a flag of the launch line that the editor dropped goes as null.
function requestFlags(view) {
  const flags = { ...state.editor.flags };
  for (const name of Object.keys((view.launch && view.launch.flags) || {})) if (!(name in flags)) flags[name] = null;
  return flags;
}

async function restart(root) {
  const error = root.querySelector("#ctl-error");
  root.querySelector("#ctl-confirm").hidden = true;
  error.textContent = "";
  const { status, statusText, answer } = await postRestart(state.host, {
    flags: requestFlags(state.view), expectedRun: state.basedOn, token: root.querySelector("#ctl-token").value,
  });
  if (status === 202) {
    follow(root);
    return;
  }
  const detail = answer.detail;
  const reason = detail && typeof detail === "object" ? detail.message || JSON.stringify(detail) : detail || statusText;
  if (detail && typeof detail === "object") state.editor.showErrors(detail.errors || []);
  // 409: another restart is under way, or the server's run is no longer the one this diff was made against.
  error.textContent = status === 409 ? `409: not restarted: ${reason}` : `${status}: ${reason}`;
  if (status === 409) refreshController(root, state.host).catch(reported("controller"));
}

// Poll once a second, and only while a restart runs.
function follow(root) {
  root.querySelector("#ctl-progress").hidden = false;
  clearInterval(state.polling);
  const host = state.host;
  const tick = async () => {
    const status = await fetchRestartStatus(host);
    if (host !== state.host) return;
    showOperation(root, status.operation);
    if (!status.busy) {
      clearInterval(state.polling);
      root.querySelector("#ctl-progress").dataset.done = "true";
      showAccuracy(root);
    }
  };
  root.querySelector("#ctl-progress").dataset.done = "false";
  state.polling = setInterval(tick, 1000);
  tick();
}

function showOperation(root, op) {
  if (!op) return;
  root.querySelector("#ctl-state").textContent = op.state;
  const outcome = root.querySelector("#ctl-outcome");
  outcome.textContent = op.outcome ? `${op.outcome}${op.detail ? `: ${op.detail}` : ""}` : "";
  outcome.className = op.outcome === "ok" ? "good" : op.outcome ? "error" : "";
  root.querySelector("#ctl-steps").replaceChildren(...op.steps.map((s) =>
    el("li", { text: `${new Date(s.at * 1000).toLocaleTimeString()} ${s.message}` })));
  root.querySelector("#ctl-log").textContent = (op.log_tail || []).join("\n");
}
