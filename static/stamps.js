// Which points a chart's trace does not hold yet. Two samples may share a stamp (SGLang logs whole
// seconds, and a fast decode logs twice in one): a point is [t, v, position], its position among the
// host's points of that stamp (the stream's `stamp_index`, or its place in a fetched answer). One
// older than the trace's end, or at its last stamp in a position the trace already holds, came twice
// (replay, backfill or a refill's history overlap the stream): dropped. A point without a position
// is new only when it is newer than the trace's end.
import { lastTime } from "./charts.js";

// Stamps compared as the chart holds them: whole milliseconds of a Date (charts.js's toX).
const ms = (t) => new Date(t * 1000).getTime();
const xMs = (x) => new Date(x).getTime();

export function newPoints(element, index, points) {
  const x = element.data?.[index]?.x || [];
  let last = x.length ? xMs(x[x.length - 1]) : undefined;
  let held = endCount(x);
  const out = [];
  for (const point of points) {
    const [t, , position] = point;
    const stamp = ms(t);
    if (last !== undefined && stamp < last) continue;
    const same = stamp === last;
    if (same && (position === undefined || position < held)) continue;
    out.push(point);
    held = same ? Math.max(held, position) + 1 : (position ?? 0) + 1;
    last = stamp;
  }
  return out;
}

// How many points a trace ends with at its last stamp.
function endCount(x) {
  let count = 0;
  for (let i = x.length - 1; i >= 0 && xMs(x[i]) === xMs(x[x.length - 1]); i -= 1) count += 1;
  return count;
}

// Each point's position among the points of its stamp: `first` for the first stamp (what came before
// it there), then counted along equal stamps.
export function withPositions(points, first = 0) {
  let position = first;
  return points.map(([t, v], i) => {
    if (i > 0) position = ms(t) === ms(points[i - 1][0]) ? position + 1 : 0;
    return [t, v, position];
  });
}

// The series is fetched from just before where a trace ends: `since` excludes its stamp, and the
// trace may hold only some of that stamp's points.
export function sinceLast(element, index) {
  const last = lastTime(element, index);
  return last === undefined ? undefined : last - 0.001;
}

