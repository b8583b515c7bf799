// The campaign panel: the host's tuning campaign as GET /api/campaign/{host} has it, watched (it is
// planned, started, paused and stopped through the API or `kvwatch campaign`). The plan with each
// candidate's prediction, the step under way and its phase, then the final table and the price
// sentences. Every value is server text: text nodes only (dom.js's `el`).
import { el } from "./dom.js";

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

// `answer` is null when the host has no campaign: the panel hides.
export function renderCampaign(container, answer) {
  container.hidden = !answer;
  if (!answer) {
    container.replaceChildren();
    return;
  }
  const prices = answer.prices || [];
  container.replaceChildren(
    el("h2", { text: `campaign ${answer.id}` }),
    el("p", { "data-testid": "campaign-state", "data-state": answer.state,
              text: answer.state + (answer.reason ? `: ${answer.reason}` : "") }),
    liveStep(answer),
    table(answer),
    prices.length
      ? el("ul", { class: "campaign-prices", "data-testid": "campaign-prices" }, ...prices.map((p) => el("li", { text: p })))
      : null);
}
