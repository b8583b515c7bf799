// Lines break at gaps: two points further apart than a few sampling intervals get a null between them
// (with connectgaps false), so a collector that was away for ten minutes is not drawn as a straight line.
// A trace sampled on change (`steps`: a count, sampled when it moves) never breaks: a long way between
// two samples means it held its value, and it is drawn as steps.
//
// The limit is a function of all the points a trace holds (GAP_STEPS times their median step), so a tab
// that drew them a second at a time breaks its line exactly where a tab that loaded them at once does.
// Each trace keeps its steps sorted: a live point inserts one, a point dropped off the window's start
// removes one, and when the median moves the limit the whole trace is gapped again.
const GAP_STEPS = 5;
const MIN_GAP_S = 5;

function stepsOf(times) {
  const steps = [];
  for (let i = 1; i < times.length; i += 1) {
    const step = times[i] - times[i - 1];
    if (step > 0) steps.push(step);
  }
  return steps.sort((a, b) => a - b);
}

function limitOf(sorted) {
  return sorted.length ? Math.max(MIN_GAP_S, GAP_STEPS * sorted[Math.floor(sorted.length / 2)]) : null;
}

function place(sorted, value) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insertStep(sorted, step) {
  if (step > 0) sorted.splice(place(sorted, step), 0, step);
}

function removeStep(sorted, step) {
  if (!(step > 0)) return;
  const at = place(sorted, step);
  if (sorted[at] === step) sorted.splice(at, 1);
}

export function withGaps(points, limit, after) {
  if (!limit) return points;
  const out = [];
  let previous = after;
  for (const point of points) {
    if (previous !== undefined && point[0] - previous > limit) out.push([(previous + point[0]) / 2, null]);
    out.push(point);
    previous = point[0];
  }
  return out;
}

const seconds = (x) => new Date(x).getTime() / 1000;

// The trace's own points, its gap marks (null values) left out.
function pointsOf(trace) {
  const out = [];
  for (let i = 0; i < trace.x.length; i += 1) if (trace.y[i] !== null) out.push([seconds(trace.x[i]), trace.y[i]]);
  return out;
}

function kept(element) {
  element.gapLimits = element.gapLimits || [];
  element.gapSteps = element.gapSteps || [];
  return element.gapSteps;
}

function stepsFor(element, index) {
  const steps = kept(element);
  if (!steps[index]) steps[index] = stepsOf(pointsOf(element.data[index]).map(([t]) => t));
  return steps[index];
}

// A trace's whole points (a fetch, a refill): its steps and limit start again from them. With fewer than
// two points the limit it had stays (one point says nothing about the sampling).
export function gapped(element, index, points) {
  if (element.stepTraces?.[index]) return points;
  const sorted = stepsOf(points.map(([t]) => t));
  kept(element)[index] = sorted;
  element.gapLimits[index] = limitOf(sorted) ?? element.gapLimits[index] ?? null;
  return withGaps(points, element.gapLimits[index]);
}

// Live points onto a drawn trace (its x and y arrays, in place).
export function appendGapped(element, index, points, toX) {
  const trace = element.data[index];
  if (element.stepTraces?.[index]) {
    trace.x.push(...toX(points));
    trace.y.push(...points.map(([, v]) => v));
    return;
  }
  const sorted = stepsFor(element, index);
  const last = trace.x.length ? seconds(trace.x[trace.x.length - 1]) : undefined;
  let previous = last;
  for (const [t] of points) {
    if (previous !== undefined) insertStep(sorted, t - previous);
    previous = t;
  }
  const limit = limitOf(sorted) ?? element.gapLimits[index] ?? null;
  if (limit === element.gapLimits[index]) {
    const added = withGaps(points, limit, last);
    trace.x.push(...toX(added));
    trace.y.push(...added.map(([, v]) => v));
    return;
  }
  element.gapLimits[index] = limit;
  const all = withGaps([...pointsOf(trace), ...points], limit);
  trace.x = toX(all);
  trace.y = all.map(([, v]) => v);
}

// The window's first `count` entries leave the trace; so do their steps.
export function dropFirst(element, index, count) {
  const trace = element.data[index];
  if (count <= 0) return;
  const sorted = element.gapSteps?.[index];
  if (sorted) {
    let previous;
    for (let i = 0; i < trace.x.length && (i < count || previous === undefined || trace.y[i] === null); i += 1) {
      if (trace.y[i] === null) continue;
      const t = seconds(trace.x[i]);
      if (previous !== undefined) removeStep(sorted, t - previous);
      previous = t;
      if (i >= count) break;
    }
  }
  trace.x.splice(0, count);
  trace.y.splice(0, count);
}

// Points were taken off the trace some other way: its steps are counted again when next needed.
export function forgetSteps(element, index) {
  if (element.gapSteps) element.gapSteps[index] = undefined;
}
