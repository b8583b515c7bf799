// The one theme: colours are CSS custom properties (style.css, light and dark); whatever plotly draws
// takes them from plotlyTheme() here, and a theme change re-colours every plotly figure on the page.
// plotlyTheme() and onThemeChange() keep their names: charts.js calls both, overlay.js plotlyTheme().
// No colour is written anywhere else: charts.js names custom properties and reads them here.

const THEMES = ["auto", "light", "dark"];
const STORE_KEY = "kvwatch-theme";
const EVENT = "kvwatch:theme";

export function cssColor(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// The series colours, in order: the first two are the charts' own (--accent, --accent2).
export function seriesColors() {
  return ["--accent", "--accent2", "--good", "--bad", "--marker", "--series6"].map(cssColor);
}

// What every plotly layout starts from: transparent backgrounds (the card shows through), the
// page's text colour, grid lines in --grid, and the named colours for traces and shapes.
export function plotlyTheme() {
  const fg = cssColor("--fg");
  const grid = cssColor("--grid");
  return {
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: fg, size: 12 },
    axis: { gridcolor: grid, linecolor: grid, zerolinecolor: grid },
    colors: { fg, grid, muted: cssColor("--muted"), accent: cssColor("--accent"), accent2: cssColor("--accent2"),
              bad: cssColor("--bad"), good: cssColor("--good"), warn: cssColor("--warn"), marker: cssColor("--marker") },
    series: seriesColors(),
  };
}

// Re-colour a drawn plotly figure: backgrounds, text and every axis it has (x, y, y2, x3, ...).
export function applyTheme(element) {
  if (!element.layout || !window.Plotly) return;
  const theme = plotlyTheme();
  const update = { paper_bgcolor: theme.paper_bgcolor, plot_bgcolor: theme.plot_bgcolor, "font.color": theme.font.color };
  for (const key of Object.keys(element.layout).filter((k) => /^[xy]axis\d*$/.test(k))) {
    for (const [name, value] of Object.entries(theme.axis)) update[`${key}.${name}`] = value;
  }
  window.Plotly.relayout(element, update);
}

export function onThemeChange(callback) {
  document.addEventListener(EVENT, () => callback(plotlyTheme()));
}

function announce() {
  for (const figure of document.querySelectorAll(".js-plotly-plot")) applyTheme(figure);
  document.dispatchEvent(new CustomEvent(EVENT));
}

// The theme button cycles auto → light → dark (kept in localStorage); "auto" follows the system,
// live: a system switch to dark at dusk re-colours the charts too.
export function setupTheme(button) {
  const apply = (theme, quiet = false) => {
    document.documentElement.dataset.theme = theme;
    button.textContent = `theme: ${theme}`;
    if (!quiet) announce();
  };
  apply(THEMES.includes(localStorage.getItem(STORE_KEY)) ? localStorage.getItem(STORE_KEY) : "auto", true);
  button.addEventListener("click", () => {
    const next = THEMES[(THEMES.indexOf(document.documentElement.dataset.theme) + 1) % THEMES.length];
    localStorage.setItem(STORE_KEY, next);
    apply(next);
  });
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
    if (document.documentElement.dataset.theme === "auto") announce();
  });
}
