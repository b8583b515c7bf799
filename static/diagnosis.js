// The diagnosis of the host's run in words: the verdict as one sentence with its numbers, the evidence
// behind it, and the suggestions, each with its predicted effect and a button that fills the controller's
// flag editor with that change (filling never restarts: the restart is the controller's own confirmation).
// Everything shown is server text, so every value is a text node (dom.js's `el`), never markup.
import { el } from "./dom.js";
import { fillEditor } from "./controller.js";
import { fmt } from "./flageditor.js";

const flagsText = (flags) => Object.entries(flags)
  .map(([name, value]) => (value === null ? `--${name} (its default)` : `--${name} ${fmt(value)}`)).join(" ");

function suggestion(host, advice, index) {
  const item = el("li", { "data-testid": `diag-suggestion-${index}` }, el("span", { text: advice.action }));
  if (advice.effect) {
    item.append(el("span", { class: "muted diag-effect", "data-testid": `diag-effect-${index}`,
                             text: ` → predicted: ${advice.effect}` }));
  }
  const risks = (advice.predicted && advice.predicted.risks) || [];
  if (risks.length) {
    item.append(el("span", { class: "error diag-risk", "data-testid": `diag-risk-${index}`,
                             text: ` · risk: ${risks.map((r) => r.message).join("; ")}` }));
  }
  if (!advice.flags) return item;
  const note = el("span", { class: "muted", "data-testid": `diag-fill-note-${index}` });
  const fill = () => {
    note.textContent = fillEditor(host, advice.flags)
      ? " in the editor: review it in the controller panel"
      : " this host has no controller to fill";
  };
  item.append(" ", el("button", { type: "button", class: "small", "data-testid": `diag-fill-${index}`,
                                  text: `put ${flagsText(advice.flags)} in the editor`, onclick: fill }), note);
  return item;
}

// `answer` is GET /api/hosts/{host}/diagnosis's JSON (null when it did not load: the panel hides).
export function renderDiagnosis(container, host, answer) {
  container.hidden = !(answer && answer.verdict);
  if (container.hidden) {
    container.replaceChildren();
    return;
  }
  const advice = answer.suggestions || [];
  container.replaceChildren(
    el("h2", { text: "diagnosis" + (answer.run ? ` · run ${answer.run}` : "") }),
    el("p", { class: "diag-sentence", "data-testid": "diag-sentence", "data-verdict": answer.verdict,
              text: answer.sentence || answer.verdict.replace(/_/g, " ") }),
    el("details", {}, el("summary", { text: "evidence" }),
      el("ul", { "data-testid": "diag-evidence" }, ...(answer.evidence || []).map((e) => el("li", { text: e.fact })))),
    advice.length
      ? el("ol", { class: "diag-suggestions", "data-testid": "diag-suggestions" },
        ...advice.map((a, i) => suggestion(host, a, i)))
      : el("p", { class: "muted", text: "no suggestion for this verdict" }));
}
