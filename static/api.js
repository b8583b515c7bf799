// Talking to the kvwatch API: plain fetch for history, one EventSource for everything live.

export async function getJSON(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

export function fetchHosts() {
  return getJSON("/api/hosts");
}

export function fetchSeries(host, metric, { since, maxPoints = 2000 } = {}) {
  const query = new URLSearchParams({ host, metric, max_points: String(maxPoints) });
  if (since !== undefined) query.set("since", String(since));
  return getJSON(`/api/series?${query}`);
}

export function openStream(handlers, onState) {
  const source = new EventSource("/api/stream");
  source.onopen = () => onState("live");
  source.onerror = () => onState("reconnecting");
  for (const [event, handler] of Object.entries(handlers)) {
    source.addEventListener(event, (message) => handler(JSON.parse(message.data)));
  }
  return source;
}
