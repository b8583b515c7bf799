"""The server run a host is on, for the run-scoped rules (`RuleSpec.run_scoped`).

Runs come from app/runs (detected from the stored events, merged with the controller's). Detecting
reads every start-up event of the host, so it runs again only when the log shows a new one: a launch
(`server_args`, capacity or KV-cache lines) or a `ready`, crash, OOM or exception event, the only
events run detection reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwatch.app.runs import Run, current_run
from kvwatch.app.store.base import Store

START_KINDS = ("server_args", "capacity", "kv_cache")
RUN_EVENTS = frozenset({"ready", "crash", "oom", "exception"})
EVENT_ROWS_LIMIT = 100_000


@dataclass
class RunWatch:
    store: Store
    host: str
    run: Run | None = None
    seen_to: float | None = None  # the newest event row looked at
    looked: bool = False

    def refresh(self) -> Run | None:
        """The host's current run, looked up again when new rows can have started one."""
        first = not self.looked
        rows = self.store.events(
            self.host, kinds=(*START_KINDS, "event"), since=self.seen_to, limit=1 if first else EVENT_ROWS_LIMIT
        )
        if rows:
            self.seen_to = float(rows[-1]["t"])
        if first or len(rows) >= EVENT_ROWS_LIMIT or any(_may_start(row) for row in rows):
            self.run = current_run(self.store, self.host)
            self.looked = True
        return self.run


def _may_start(row: dict[str, object]) -> bool:
    return row["kind"] in START_KINDS or row.get("event") in RUN_EVENTS
