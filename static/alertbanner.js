// The alert banner: one entry per pending, firing or clearing alert (rule, host, value against its
// threshold, since when, a link to its chart window), acknowledge and mute from the page (with the
// restart panel's token), a browser notification when one starts firing, and the firing count in the
// title. A clearing alert (its value back on the good side, waiting out keep_firing_for) is listed
// with the server's headline, which says when it resolves, and is not loud.
// Everything from the server is set as text, never as markup.
import { postAlertAction } from "./api.js";
import { el } from "./dom.js";
import { formatAge } from "./status.js";

const TOKEN_KEY = "kvwatch-token";  // the restart panel's: sessionStorage only, never the URL
const MUTE_S = 3600;
const RELOAD_MS = 10_000;  // an open alert's value and window move between its state changes
const TITLE = "kvwatch";

export function clockText(t) {
  return `${new Date(t * 1000).toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

const quiet = (alert) => Boolean(alert.acknowledged || alert.muted_until);
const OPEN_STATES = new Set(["pending", "firing", "clearing"]);
const open = (alert) => OPEN_STATES.has(alert.state);

function sinceText(alert, now) {
  if (alert.since === null || alert.since === undefined) return "";
  return `${alert.state} since ${formatAge(Math.max(0, now - alert.since))}`;
}

function entry(alert, now) {
  const classes = ["alert-entry", `alert-${alert.state}`];
  if (alert.acknowledged) classes.push("acked");
  if (alert.muted_until) classes.push("silenced");
  const box = el("div", { class: classes.join(" "), "data-testid": "alert-entry", "data-host": alert.host,
                          "data-rule": alert.rule, "data-state": alert.state });
  const what = el("div", { class: "alert-what" });
  what.append(el("span", { class: "alert-host" }, alert.host),
              el("span", { class: "alert-headline", "data-testid": "alert-headline" }, alert.headline || alert.title || alert.rule),
              el("code", { class: "alert-rule" }, alert.rule));
  const when = el("div", { class: "alert-when" });
  const since = el("span", { class: "alert-since", "data-testid": "alert-since", "data-since": String(alert.since ?? "") },
                   sinceText(alert, now));
  if (alert.since !== null && alert.since !== undefined) {
    when.append(since, el("time", { class: "alert-at", datetime: new Date(alert.since * 1000).toISOString() },
                          clockText(alert.since)));
  }
  const notes = [];
  if (alert.acknowledged) notes.push("acknowledged");
  if (alert.muted_until) notes.push(`muted until ${clockText(alert.muted_until).slice(11)}`);
  if (notes.length) when.append(el("span", { class: "alert-quiet", "data-testid": "alert-quiet" }, notes.join(" · ")));
  const actions = el("div", { class: "alert-actions" });
  actions.append(el("a", { class: "alert-link", "data-testid": "alert-link", href: alert.link || "/" }, "show window"));
  if (!alert.acknowledged) actions.append(el("button", { type: "button", "data-action": "ack" }, "acknowledge"));
  actions.append(alert.muted_until ? el("button", { type: "button", "data-action": "unmute" }, "unmute")
                                   : el("button", { type: "button", "data-action": "mute" }, "mute 1 h"));
  box.append(what, when, actions);
  return box;
}

function notify(alert) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  new Notification(`kvwatch: ${alert.host}`, { body: alert.headline || alert.rule, tag: `${alert.host}/${alert.rule}` });
}

// Permission is asked only when the person clicks the button, never on load.
export function setupNotifyButton(button) {
  if (!("Notification" in window) || Notification.permission !== "default") {
    button.hidden = true;
    return;
  }
  button.addEventListener("click", async () => {
    await Notification.requestPermission();
    button.hidden = true;
  });
}

// The token form, shown only when an action needs a token this tab does not have (or was refused).
function tokenPrompt(message, onToken) {
  const form = el("form", { class: "alert-token", hidden: "" });
  const input = el("input", { type: "password", autocomplete: "off", "data-testid": "alert-token", "aria-label": "API token" });
  const label = el("label", {}, "token ");
  label.append(input);
  form.append(label, el("button", { type: "submit" }, "use token"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value);
    input.value = "";
    form.hidden = true;
    onToken();
  });
  const ask = (text) => {
    form.hidden = false;
    message.textContent = text;
    input.focus();
  };
  return { form, ask };
}

// Acknowledge, mute or unmute with the tab's token; without one (or refused) ask, then carry on.
function alertActions(message, onChanged) {
  let pending = null;
  const prompt = tokenPrompt(message, () => {
    const wanted = pending;
    pending = null;
    if (wanted) act(...wanted);
  });
  async function act(host, rule, action) {
    const token = sessionStorage.getItem(TOKEN_KEY) || "";
    if (!token) {
      pending = [host, rule, action];
      prompt.ask("a token is needed to acknowledge or mute");
      return;
    }
    const { status, answer } = await postAlertAction(host, rule, action, { token, forS: action === "mute" ? MUTE_S : 0 });
    if (status === 401) {
      pending = [host, rule, action];
      prompt.ask("token refused: enter the server's token");
      return;
    }
    message.textContent = status < 300 ? "" : `${action}: ${answer.detail ?? `HTTP ${status}`}`;
    onChanged();
  }
  return { act, form: prompt.form };
}

// `onChanged` reloads the alerts: after an action (every other tab hears it as an SSE `alert` event),
// and every RELOAD_MS while one is open, so its value and its window's link stay current.
export function createAlertBanner(banner, { onChanged }) {
  const state = { alerts: [], seen: null };
  const list = el("div", { class: "alert-list" });
  const message = el("p", { class: "alert-message", "data-testid": "alert-message", role: "status" });
  const actions = alertActions(message, onChanged);
  banner.replaceChildren(list, actions.form, message);
  list.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const box = button.closest(".alert-entry");
    actions.act(box.dataset.host, box.dataset.rule, button.dataset.action);
  });

  function render(alerts) {
    state.alerts = (alerts || []).filter(open);
    list.replaceChildren(...state.alerts.map((alert) => entry(alert, Date.now() / 1000)));
    const firing = state.alerts.filter((a) => a.state === "firing");
    const loud = firing.filter((a) => !quiet(a));
    banner.hidden = state.alerts.length === 0 && actions.form.hidden && !message.textContent;
    banner.classList.toggle("loud", loud.length > 0);
    document.title = loud.length ? `(${loud.length}) ${TITLE}` : TITLE;
    const keys = firing.map((a) => `${a.host}/${a.rule}/${a.active_at ?? a.since}`);
    if (state.seen !== null) {  // the first answer only says what was already firing when the page opened
      firing.forEach((alert, i) => { if (!state.seen.has(keys[i]) && !quiet(alert)) notify(alert); });
    }
    state.seen = new Set([...(state.seen || []), ...keys]);
  }

  setInterval(() => tickSince(list, state.alerts), 1000);
  setInterval(() => { if (state.alerts.length && document.visibilityState === "visible") onChanged(); }, RELOAD_MS);
  return { render };
}

function tickSince(list, alerts) {
  const now = Date.now() / 1000;
  // An entry is its host and rule: two alerts often start in the same second (a saturated run trips
  // usage and queue together), and one must not be labelled with the other's state.
  for (const box of list.querySelectorAll("[data-testid=alert-entry]")) {
    const since = box.querySelector(".alert-since");
    const alert = alerts.find((a) => a.host === box.dataset.host && a.rule === box.dataset.rule);
    if (since && alert) since.textContent = sinceText(alert, now);
  }
}
