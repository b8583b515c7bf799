// The campaign panel: the host's tuning campaign as GET /api/campaign/{host} has it, watched (it is
// planned, started, paused and stopped through the API or `kvwatch campaign`). The plan with each
// candidate's prediction, the step under way and its phase, then the final table and the price
// sentences. Every value is server text: text nodes only (dom.js's `el`).
import { postCampaign } from "./api.js";
import { el } from "./dom.js";

const TOKEN_KEY = "kvwatch-token";  // the restart panel's: sessionStorage only, never the URL
// What a person may do with a campaign in each state (the API refuses anything else with a sentence).
const ACTIONS = {
  none: ["plan"], planned: ["start", "stop"], running: ["pause", "stop"], paused: ["resume", "stop"],
  done: ["plan"], stopped: ["plan"], failed: ["plan"],
};
const LABELS = { plan: "plan from [hosts.campaign]", start: "start (confirm this plan)", pause: "pause",
                 resume: "resume", stop: "stop" };

// The panel's last sentence to the person, per host and campaign state: the panel is drawn again on
// every refresh, and a refusal must stay on screen until the campaign moves on, not until the next poll.
const notices = new Map();

function say(host, state, message, text) {
  notices.set(host, { state, text });
  message.textContent = text;
}

// The buttons of the campaign's state; a click POSTs with the token the restart panel keeps, then
// `onChanged` fetches the campaign again. A refusal is shown as the API's sentence.
function actions(host, answer, onChanged) {
  const state = answer ? answer.state : "none";
  const kept = notices.get(host);
  const message = el("p", { class: "campaign-message", "data-testid": "campaign-message", role: "status",
                            text: kept && kept.state === state ? kept.text : "" });
  const wanted = ACTIONS[state] || [];
  const buttons = wanted.map((action) => el("button", {
    type: "button", "data-testid": `campaign-${action}`,
    onclick: async () => {
      const token = sessionStorage.getItem(TOKEN_KEY) || "";
      if (!token) {
        say(host, state, message, "enter the control token in the restart panel first");
        return;
      }
      const body = action === "start" ? { campaign: answer.id } : {};
      const { status, answer: reply } = await postCampaign(host, action, body, token);
      if (status >= 400) {
        const detail = typeof reply.detail === "string" ? reply.detail : JSON.stringify(reply.detail ?? reply);
        say(host, state, message, `${action} refused (HTTP ${status}): ${detail}`);
        return;
      }
      notices.delete(host);
      onChanged();
    },
  }, LABELS[action]));
  return el("div", { class: "campaign-actions" }, ...buttons, message);
}

function liveStep(answer) {
  if (answer.current === null || answer.current === undefined) return null;
  const step = answer.steps[answer.current];
  return el("p", { class: "campaign-live", "data-testid": "campaign-live", "data-phase": step.phase,
                   text: `step ${answer.current + 1}: ${step.candidate.name} · ${step.phase || "starting"}` });
}

function table(answer) {
  const rows = answer.table || [];
  if (!rows.length) return null;
  const columns = Object.keys(rows[0]);
  return el("table", { class: "campaign-table", "data-testid": "campaign-table" },
    el("tr", {}, ...columns.map((c) => el("th", { text: c }))),
    ...rows.map((row, i) => el("tr", { "data-testid": `campaign-step-${i + 1}`, "data-status": answer.steps[i].status },
      ...columns.map((c) => el("td", { text: row[c] })))));
}

// `answer` is null when the host has no campaign: the panel hides, unless the host has a controller
// (`canPlan`), when it offers to plan one.
export function renderCampaign(container, answer, { host, canPlan = false, onChanged = () => {} } = {}) {
  container.hidden = !answer && !canPlan;
  if (!answer) {
    container.replaceChildren(...(canPlan ? [el("h2", { text: "campaign" }), actions(host, null, onChanged)] : []));
    return;
  }
  const prices = answer.prices || [];
  container.replaceChildren(
    el("h2", { text: `campaign ${answer.id}` }),
    el("p", { "data-testid": "campaign-state", "data-state": answer.state,
              text: answer.state + (answer.reason ? `: ${answer.reason}` : "") }),
    actions(host, answer, onChanged),
    liveStep(answer),
    table(answer),
    prices.length
      ? el("ul", { class: "campaign-prices", "data-testid": "campaign-prices" }, ...prices.map((p) => el("li", { text: p })))
      : null);
}
