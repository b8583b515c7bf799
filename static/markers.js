// What the charts mark: run boundaries with the flags that changed, server starts and failures.

// `error`: SGLang's "Initialization failed" / "Health check failed", and a GPU that needs a reset or
// fell off the bus (parsers/nvidia_smi.py): its message is the marker's hover text.
const FAILURES = new Set(["crash", "oom", "exception", "watchdog_timeout", "error"]);

function epoch(value) {
  if (typeof value === "number") return value;
  if (typeof value === "string" && value) {
    const zoned = /[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`;
    const ms = Date.parse(zoned);
    return Number.isNaN(ms) ? undefined : ms / 1000;
  }
  return undefined;
}

export function changedFlags(previous, current) {
  const keys = new Set([...Object.keys(previous || {}), ...Object.keys(current || {})]);
  const changed = [];
  for (const key of [...keys].sort()) {
    const before = previous?.[key];
    const after = current?.[key];
    if (JSON.stringify(before) !== JSON.stringify(after)) {
      changed.push(after === undefined ? `-${key}` : `${key}=${after}`);
    }
  }
  return changed;
}

const SHORT = 28;  // a run's label on the chart: "run 3: mem-fraction-static=0.85" or "run 3: 4 flags"

function flagLines(flags) {
  return Object.keys(flags || {}).sort().map((key) => `${key}=${flags[key]}`);
}

// Short labels on the chart; the run's id, what changed and all of its flags on hover (`detail`,
// lines of plain text: charts.js escapes them, a flag's value is never markup).
export function runMarkers(runs) {
  const sorted = [...(runs || [])].filter((r) => epoch(r.started_at) !== undefined)
    .sort((a, b) => epoch(a.started_at) - epoch(b.started_at));
  return sorted.map((run, i) => {
    const changed = i === 0 ? [] : changedFlags(sorted[i - 1].flags, run.flags);
    let label = `run ${i + 1}`;
    if (changed.length === 1) label += `: ${changed[0].length > SHORT ? `${changed[0].slice(0, SHORT - 1)}…` : changed[0]}`;
    else if (changed.length > 1) label += `: ${changed.length} flags`;
    const detail = [`run ${run.id}`, ...(changed.length ? ["changed:", ...changed.map((c) => `  ${c}`)] : []),
                    "flags:", ...flagLines(run.flags).map((f) => `  ${f}`)];
    return { t: epoch(run.started_at), kind: "run", label, detail };
  });
}

export function eventMarkers(events, runs) {
  const starts = runMarkers(runs).map((m) => m.t);
  const out = [];
  for (const event of events || []) {
    const t = epoch(event.t);
    if (t === undefined) continue;
    if (event.event === "ready" && !starts.some((s) => Math.abs(s - t) < 120)) {
      out.push({ t, kind: "restart", label: "server start" });
    } else if (FAILURES.has(event.event)) {
      out.push({ t, kind: "failure", label: event.event,
                 detail: event.message ? [event.event, String(event.message)] : undefined });
    }
  }
  return out;
}
