"""What people did to an alert from the page: acknowledged it, or muted it for a while.

- Acknowledged: someone has seen this episode of the alert. It stays listed (and sent to the
  webhook), but the page shows it quietly: no notification, not counted in the tab title. An
  acknowledgement belongs to one episode (the alert's `active_at`): once the alert resolves and
  starts again, the new episode is not acknowledged.
- Muted until T (wall clock): the alert sends no webhook message before T, whatever its state does.

Both are documents in the store (kind "alert_silence", key "host/rule"), so every web app on the
store and every tab sees them; `sync()` tells a process which ones another process changed or which
ran out, so it can tell its pages.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields
from typing import Any

from kvwatch.app.alerts.state import OPEN_STATES
from kvwatch.app.errors import Conflict
from kvwatch.app.store.base import Store

SILENCE_DOC = "alert_silence"
MAX_SILENCE_S = 7 * 86400.0


class AlertNotOpen(Conflict):
    """Only an open (pending, firing or clearing) alert can be acknowledged."""


@dataclass(slots=True)
class Silence:
    host: str
    rule: str
    acked_episode: float | None = None  # the `active_at` of the acknowledged episode
    acked_at: float | None = None
    muted_until: float = 0.0
    changed_at: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.host}/{self.rule}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Silence:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def episode(alert: dict[str, Any]) -> float | None:
    """Which episode a public alert (or AlertState as a dict) is in: when its condition started."""
    start = alert.get("active_at")
    return float(start) if start is not None else alert.get("since")


class SilenceBook:
    """The silences of one store, cached; thread-safe."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._items: dict[str, Silence] = {}
        self._muted_keys: set[str] = set()
        self.sync(0.0)

    def sync(self, now: float) -> set[str]:
        """Re-read the store; the keys whose silence changed since the last look (written by another
        process) or whose mute ran out meanwhile."""
        stored = {s.key: s for s in (Silence.from_dict(d["data"]) for d in self.store.documents(SILENCE_DOC))}
        with self._lock:
            changed = {k for k in stored.keys() | self._items.keys() if stored.get(k) != self._items.get(k)}
            self._items = stored
            muted = {k for k, s in stored.items() if s.muted_until > now}
            changed |= self._muted_keys - muted
            self._muted_keys = muted
        return changed

    def get(self, key: str) -> Silence | None:
        with self._lock:
            return self._items.get(key)

    def acknowledge(self, host: str, rule: str, alert: dict[str, Any], now: float) -> Silence:
        if alert.get("state") not in OPEN_STATES:
            raise AlertNotOpen(f"{host}/{rule} is {alert.get('state', 'inactive')}: only an open alert is acknowledged")
        return self._write(host, rule, now, acked_episode=episode(alert), acked_at=now)

    def mute(self, host: str, rule: str, until: float, now: float) -> Silence:
        return self._write(host, rule, now, muted_until=min(until, now + MAX_SILENCE_S))

    def unmute(self, host: str, rule: str, now: float) -> Silence:
        return self._write(host, rule, now, muted_until=0.0)

    def muted(self, key: str, now: float) -> bool:
        silence = self.get(key)
        return silence is not None and silence.muted_until > now

    def annotate(self, alert: dict[str, Any], now: float) -> dict[str, Any]:
        """Add `acknowledged`, `acknowledged_at` and `muted_until` (null when not muted) to a public alert."""
        silence = self.get(f"{alert['host']}/{alert['rule']}")
        acked = (
            silence is not None
            and silence.acked_episode is not None
            and alert.get("state") in OPEN_STATES
            and silence.acked_episode == episode(alert)
        )
        alert["acknowledged"] = acked
        alert["acknowledged_at"] = silence.acked_at if acked and silence is not None else None
        muted = silence is not None and silence.muted_until > now
        alert["muted_until"] = silence.muted_until if muted and silence is not None else None
        return alert

    def _write(self, host: str, rule: str, now: float, **change: Any) -> Silence:
        with self._lock:
            old = self._items.get(f"{host}/{rule}") or Silence(host, rule)
            silence = Silence(**{**asdict(old), **change, "changed_at": now})
            self.store.put_document(SILENCE_DOC, silence.key, host, now, asdict(silence))
            self._items[silence.key] = silence
            if silence.muted_until > now:
                self._muted_keys.add(silence.key)
            else:
                self._muted_keys.discard(silence.key)
            return silence
