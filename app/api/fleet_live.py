"""The fleet's rows kept live on the server, sent to pages as one `fleet` event a second with only what
changed.

Reading every host's row from the store each second costs about 4 ms a host (a status, a run, alerts):
a core at 256 hosts, and the page would parse and walk every row again. Instead the keeper follows the
bus. A host's newest now-row numbers come straight from its `sample` events (the same combined values
the store just committed). A whole row is read again when the host's run, alerts or collector change,
and otherwise every FULL_EVERY_S, staggered so that each second reads about an equal share of the
fleet. The windowed numbers (mean, pace, ETA), the verdict and the sparklines are therefore up to
FULL_EVERY_S old; the now-row numbers are as fresh as the stream.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from kvwatch.app.api.fleet_rows import host_row, kept_for
from kvwatch.app.api.host_status import NOW_METRICS
from kvwatch.app.fleet.attention import ordered
from kvwatch.app.fleet.totals import common_flags, flag_difference, group_totals, job_totals
from kvwatch.app.metrics_catalog.names import COMPLETIONS
from kvwatch.app.services import Services
from kvwatch.collectors.periodic import Periodic

Row = dict[str, Any]

FULL_EVERY_S = 5.0
TICK_S = 1.0
FAST_METRICS = frozenset((*NOW_METRICS, COMPLETIONS))
FULL_ON = frozenset({"run", "alert", "host", "event"})  # news that changes more than the numbers
UNSENT = frozenset({"as_of", "sources"})  # ages: the page counts them from `sources_at` and `fresh_at`


def changed_fields(row: Row, sent: Row | None) -> Row:
    """The fields of `row` that differ from what the page was sent (all of them for a new row)."""
    if sent is None:
        return {k: v for k, v in row.items() if k not in UNSENT}
    return {k: v for k, v in row.items() if k not in UNSENT and sent.get(k) != v}


class FleetKeeper:
    """Every host's fleet row, refreshed from the bus; `tick()` publishes what changed since the last."""

    def __init__(self, services: Services, full_every: float = FULL_EVERY_S) -> None:
        self._services = services
        self._full_every = full_every
        self._cache = kept_for(services)
        self._lock = threading.Lock()
        self._fast: dict[str, dict[str, float]] = {}
        self._due: set[str] = set()
        self._resend: set[str] = set()
        self._rows: dict[str, Row] = {}
        self._read_at: dict[str, float] = {}
        self._sent: dict[str, Row] = {}
        self._sent_order: list[str] = []
        self._sent_summary: Row = {}
        self._loop = Periodic("fleet", self._tick_while_listened, TICK_S, first_after=None)

    def start(self) -> None:
        self._services.bus.add_listener(self.note)
        self._loop.start()

    def stop(self) -> None:
        self._services.bus.remove_listener(self.note)
        self._loop.stop()

    def note(self, event: str, data: Any) -> None:
        """The bus's listener (any thread, under no lock of the bus): remember, read nothing."""
        host = data.get("host") if isinstance(data, dict) else None
        if not isinstance(host, str):
            return
        if event == "sample":
            newest = {m: float(p[-1][1]) for m, p in data.get("points", {}).items() if m in FAST_METRICS and p}
            stamp = max((float(p[-1][0]) for p in data.get("points", {}).values() if p), default=None)
            with self._lock:
                fast = self._fast.setdefault(host, {})
                fast.update(newest)
                if stamp is not None:
                    fast["fresh_at"] = max(stamp, fast.get("fresh_at", stamp))
        elif event in FULL_ON:
            with self._lock:
                self._due.add(host)
                if event == "alert":  # the page may have moved the row on the event itself: send it whole
                    self._resend.add(host)

    def tick(self, now: float | None = None) -> dict[str, Any] | None:
        """Bring the rows up to date and publish the difference as one `fleet` event (None: nothing new)."""
        clock = time.time() if now is None else now
        self._refresh(clock)
        change = self.difference()
        if change is not None:
            self._services.bus.publish("fleet", change)
        return change

    def _tick_while_listened(self) -> None:
        if self._services.bus.listened:
            self.tick()
            return
        # Nobody to tell: read nothing. The first page to listen is sent every row whole.
        self._rows.clear()
        self._sent.clear()
        self._sent_order = []
        self._sent_summary = {}

    def _refresh(self, now: float) -> None:
        with self._lock:
            fast, self._fast = self._fast, {}
            due, self._due = self._due, set()
            resend, self._resend = self._resend, set()
        for host_name in resend:
            self._sent.pop(host_name, None)
        hosts = self._services.config.hosts
        share = math.ceil(len(hosts) * TICK_S / self._full_every)
        stale = sorted((h for h in hosts if h.name not in due and h.name in self._rows),
                       key=lambda h: self._read_at.get(h.name, 0.0))
        oldest = {h.name for h in stale[:share] if now - self._read_at[h.name] >= self._full_every}
        for host in hosts:
            if host.name in due or host.name in oldest or host.name not in self._rows:
                row = host_row(self._services, host, self._cache, now)
                row["fresh_at"] = self._rows.get(host.name, {}).get("fresh_at")
                self._rows[host.name] = row
                self._read_at[host.name] = now
            if host.name in fast:
                self._rows[host.name].update(fast[host.name])
        for gone in set(self._rows) - {h.name for h in hosts}:
            self._rows.pop(gone, None)
            self._read_at.pop(gone, None)

    def rows(self) -> list[Row]:
        """The kept rows, most urgent first, each with its difference from the fleet's common config."""
        rows = [self._rows[h.name] for h in self._services.config.hosts if h.name in self._rows]
        common = common_flags(rows)
        kept: list[Row] = ordered([{**row, "config_diff": flag_difference(row["flags"], common)} for row in rows])
        return kept

    def difference(self) -> dict[str, Any] | None:
        """What the page lacks: changed rows' changed fields, the order when it moved, totals when they
        changed; None when nothing did."""
        rows = self.rows()
        changed = []
        for row in rows:
            fields = changed_fields(row, self._sent.get(row["host"]))
            if fields:
                changed.append({**fields, "host": row["host"]})
                self._sent[row["host"]] = row
        order = [row["host"] for row in rows]
        summary = {"totals": job_totals(rows), "groups": group_totals(rows), "common_flags": common_flags(rows)}
        change: dict[str, Any] = {"rows": changed}
        if order != self._sent_order:
            change["order"] = self._sent_order = order
        if summary != self._sent_summary:
            change.update(summary)
            self._sent_summary = summary
        return change if changed or len(change) > 1 else None
