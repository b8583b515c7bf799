// The flag editor of the controller panel: one row per flag of the next run, widgets from the host's
// own sglang schema (a select where argparse has choices, a checkbox for switches), and the diff.

import { el } from "./dom.js";

const SWITCHES = new Set(["store_true", "store_false", "boolean_optional", "other:DeprecatedStoreTrueAction"]);
const NUMERIC = new Set(["int", "float", "human_readable_int"]);


export const testid = (name) => name.replace(/[^A-Za-z0-9_-]/g, "_");

// A value as the server sees it: numbers for numeric options, booleans for switches, text otherwise.
function parse(option, raw) {
  if (option && NUMERIC.has(option.type) && raw !== "" && Number.isFinite(Number(raw))) return Number(raw);
  return raw;
}

function widget(option, value, onChange) {
  const id = `flag-input-${testid(option ? option.name : "x")}`;
  if (option && SWITCHES.has(option.action)) {
    const box = el("input", { type: "checkbox", id, "data-testid": id });
    box.checked = value === true || value === "true";
    box.addEventListener("change", () => onChange(box.checked));
    return box;
  }
  if (option && option.choices && option.choices.length) {
    const select = el("select", { id, "data-testid": id });
    for (const choice of option.choices) select.add(new Option(String(choice), String(choice)));
    if (!option.choices.map(String).includes(String(value))) select.add(new Option(String(value), String(value)));
    select.value = String(value);
    select.addEventListener("change", () => onChange(parse(option, select.value)));
    return select;
  }
  const numeric = option && NUMERIC.has(option.type);
  const input = el("input", { type: numeric ? "number" : "text", step: numeric ? "any" : undefined, id,
                              "data-testid": id });
  input.value = value === null || value === undefined ? "" : String(value);
  input.addEventListener("input", () => onChange(parse(option, input.value)));
  return input;
}

// {added, changed, removed} between the flags that run now and the flags the editor holds.
export function diffFlags(current, next) {
  const added = [], changed = [], removed = [];
  for (const [name, value] of Object.entries(next)) {
    if (!(name in current)) added.push({ name, to: value });
    else if (JSON.stringify(current[name]) !== JSON.stringify(value)) changed.push({ name, from: current[name], to: value });
  }
  for (const name of Object.keys(current)) if (!(name in next)) removed.push({ name, from: current[name] });
  return { added, changed, removed };
}

export function renderDiff(container, diff) {
  container.replaceChildren();
  const total = diff.added.length + diff.changed.length + diff.removed.length;
  if (!total) {
    container.append(el("p", { class: "muted", text: "no change from the flags that run now" }));
    return;
  }
  const list = el("ul", { class: "flag-diff" });
  for (const { name, to } of diff.added) list.append(el("li", { class: "diff-added", text: `+ --${name} ${fmt(to)}` }));
  for (const { name, from, to } of diff.changed) {
    list.append(el("li", { class: "diff-changed", text: `~ --${name} ${fmt(from)} → ${fmt(to)}` }));
  }
  for (const { name, from } of diff.removed) list.append(el("li", { class: "diff-removed", text: `− --${name} ${fmt(from)}` }));
  container.append(list);
}

export const fmt = (value) => (typeof value === "string" ? value : JSON.stringify(value));

export class FlagEditor {
  constructor(container, options, onChange) {
    this.container = container;
    this.options = new Map(options.map((o) => [o.name, o]));
    for (const option of options) for (const alias of option.aliases || []) this.options.set(alias, option);
    this.onChange = onChange;
    this.flags = {};
    this.errors = {};
    this.problems = {};  // flag -> {kind, message} from the dry-run check, marked without re-rendering
  }

  // Mark the rows a restart would refuse (vetoed, guarded, invalid) in place: typing keeps its focus.
  mark(problems) {
    this.problems = Object.fromEntries(problems.map((p) => [p.flag, p]));
    for (const row of this.container.querySelectorAll("tr[data-flag]")) this.markRow(row, row.dataset.flag);
  }

  markRow(row, name) {
    const problem = this.problems[name];
    row.classList.toggle("flag-problem", Boolean(problem));
    if (problem) row.dataset.problem = problem.kind; else delete row.dataset.problem;
    const cell = row.querySelector("td.error");
    if (cell && !this.errors[name]) cell.textContent = problem ? `${problem.kind}: ${problem.message}` : "";
  }

  set(flags) {
    this.flags = { ...flags };
    this.errors = {};
    this.render();
  }

  showErrors(errors) {
    this.errors = Object.fromEntries(errors.map((e) => [e.flag, e.message]));
    this.render();
  }

  update(name, value) {
    this.flags[name] = value;
    delete this.errors[name];
    this.onChange(this.flags);
  }

  add(name) {
    const option = this.options.get(name.replace(/^--/, ""));
    if (!option || option.name in this.flags) return false;
    this.flags[option.name] = SWITCHES.has(option.action) ? true : option.default ?? "";
    this.render();
    this.onChange(this.flags);
    return true;
  }

  remove(name) {
    delete this.flags[name];
    this.render();
    this.onChange(this.flags);
  }

  render() {
    const rows = Object.entries(this.flags).map(([name, value]) => {
      const option = this.options.get(name);
      const error = this.errors[name];
      return el("tr", { "data-flag": name },
        el("td", { title: option ? option.help || "" : "unknown to this sglang" }, el("code", { text: `--${name}` })),
        el("td", {}, widget(option || { name }, value, (v) => this.update(name, v))),
        el("td", {}, el("button", { type: "button", class: "small", "data-testid": `flag-remove-${testid(name)}`,
                                    text: "remove", onclick: () => this.remove(name) })),
        el("td", { class: "error", "data-testid": `flag-error-${testid(name)}`, text: error || "" }));
    });
    for (const row of rows) this.markRow(row, row.dataset.flag);
    const extra = Object.entries(this.errors).filter(([flag]) => !(flag in this.flags))
      .map(([flag, message]) => el("tr", {}, el("td", { colspan: 4, class: "error", "data-testid": `flag-error-${testid(flag)}`,
                                                         text: `${flag}: ${message}` })));
    this.container.replaceChildren(el("table", { class: "flag-table" }, el("tbody", {}, ...rows, ...extra)));
  }

  // A search box over every option's name and aliases; picking one adds a row.
  searchBox() {
    const list = el("datalist", { id: "flag-names" });
    for (const name of [...this.options.keys()].sort()) list.append(el("option", { value: name }));
    const input = el("input", { type: "search", id: "flag-search", "data-testid": "flag-search", list: "flag-names",
                                placeholder: "add a flag: type its name", autocomplete: "off" });
    const add = () => { if (this.add(input.value.trim())) input.value = ""; };
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") add(); });
    return el("span", { class: "flag-search" }, input, list,
              el("button", { type: "button", id: "flag-add", "data-testid": "flag-add", text: "add", onclick: add }));
  }
}
