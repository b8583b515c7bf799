// The controller panel's presets: named flag sets laid over the flags that run now, which the page says
// plainly (what a preset sets, what it keeps). A preset that sets a vetoed value itself is disabled with
// the reason; one that only keeps a vetoed value the server runs now (the run was started outside kvwatch)
// stays selectable, says which kept flag is vetoed, and the editor marks that row until it is removed.
import { el } from "./dom.js";
import { fmt } from "./flageditor.js";

const glob = (pattern) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`);

function vetoOf(flags, vetoes) {
  for (const veto of vetoes) {
    const value = flags[veto.flag];
    if (value !== undefined && glob(String(veto.value)).test(String(value))) return veto;
  }
  return null;
}

// What picking `preset` does to the flags that run now (`current`): what it sets, what it keeps.
export function presetEffect(preset, current) {
  const sets = Object.entries(preset.flags).map(([k, v]) => (v === true ? `--${k}` : `--${k} ${fmt(v)}`));
  const kept = Object.keys(current).filter((k) => !(k in preset.flags)).map((k) => `--${k}`);
  return `preset ${preset.name} applies on top of the flags that run now: it sets ${sets.join(", ") || "nothing"}` +
    (kept.length ? `; it keeps ${kept.join(", ")} as they run now (remove a flag below to drop it)` : "") +
    `. Its description: ${preset.description || "none"}`;
}

// `on.current()`: the flags that run now; `on.pick(preset or null)`: lay it over them in the editor.
export function renderPresets(box, effect, view, on) {
  const pick = (preset) => {
    on.pick(preset);
    effect.textContent = preset ? presetEffect(preset, on.current()) : "";
  };
  const none = el("label", { class: "preset" }, el("input", { type: "radio", name: "preset", checked: true,
                                                               "data-testid": "preset-none", onchange: () => pick(null) }),
                  " keep the flags that run now");
  box.replaceChildren(none);
  for (const preset of view.presets) {
    const veto = vetoOf(preset.flags, view.vetoes);
    const kept = veto ? null : vetoOf({ ...on.current(), ...preset.flags }, view.vetoes);
    const radio = el("input", { type: "radio", name: "preset", disabled: Boolean(veto), value: preset.name,
                                "data-testid": `preset-${preset.name}`, onchange: () => pick(preset) });
    box.append(el("label", { class: veto ? "preset vetoed" : "preset", "data-preset": preset.name }, radio, " ",
      el("strong", { text: preset.name }),
      el("span", { class: "muted", text: ` ${preset.description || ""}` }),
      veto ? el("span", { class: "veto", "data-testid": `veto-${preset.name}`,
                          text: ` vetoed: --${veto.flag}=${veto.value}: ${veto.reason}` }) : null,
      kept ? el("span", { class: "veto", "data-testid": `veto-kept-${preset.name}`,
                          text: ` keeps --${kept.flag} ${fmt(on.current()[kept.flag])} as it runs now, which is vetoed ` +
                                `(${kept.reason}): remove it below before restarting` }) : null));
  }
}
