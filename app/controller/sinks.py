"""What the controller tells the rest of kvwatch: audit records and new runs.

The store implements both Protocols; tests use small in-memory ones. Calls come from the restart's
worker thread, so implementations must be thread-safe. They must not raise: an exception there is
logged and the restart carries on (the server matters more than the bookkeeping).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from kvwatch.app.flags.schema import FlagValue

log = logging.getLogger(__name__)

Outcome = Literal[
    "ok",            # the new flags are up and healthy
    "rolled_back",   # the new flags failed; the last good flags are up again
    "failed",        # neither came up (or the restart-loop cap stopped the rollback): server down
    "interrupted",   # lost the host mid-way; the state found afterwards is in `detail`
    "invalid",       # 422: refused before anything ran
    "vetoed",        # 403: refused by policy before anything ran
    "busy",          # 409: another restart holds the host
    "stale",         # 409: the request was made against a run that is no longer the current one
    "rate_limited",  # 429: the restart-loop cap
]


@dataclass(frozen=True, slots=True)
class RestartRecord:
    """One audit entry: who asked what, when, and how it ended."""

    host: str
    who: str
    at: float                            # epoch seconds of the request
    from_flags: dict[str, FlagValue]
    to_flags: dict[str, FlagValue]
    outcome: Outcome
    detail: str = ""
    run_id: str | None = None            # the run started with `to_flags`, if one was started
    operation_id: str = ""


class AuditSink(Protocol):
    def record_restart(self, record: RestartRecord) -> None: ...


class RunSink(Protocol):
    """A run is one server start with its flags; its log is followed from `log_path` on the host.

    `run_started` is called once the host is locked and before the server is spawned, so that the run
    id can be answered at once (202); it returns the id the store gave the run. `run_ended` follows
    when kvwatch stops that server, or when it failed to become ready.
    """

    def run_started(self, host: str, flags: dict[str, FlagValue], log_path: str, started_at: float) -> str: ...

    def run_ended(self, host: str, run_id: str, ended_at: float, reason: str) -> None: ...


class Forecast(Protocol):
    """What a restart is expected to give (app/diagnosis), kept with the run it starts.

    `predict` is asked before the new run is announced, so it reads the run that runs now; `keep`
    stores the answer under the new run's id. Both may fail: that is logged, the restart goes on."""

    def predict(self, from_flags: dict[str, FlagValue], to_flags: dict[str, FlagValue]) -> dict[str, Any] | None: ...

    def keep(self, run_id: str, based_on: str | None, prediction: dict[str, Any]) -> None: ...


class Ledger:
    """One host's calls into the sinks, each isolated: a failing sink is logged, the restart goes on."""

    def __init__(self, host: str, audit: AuditSink, runs: RunSink, clock: Callable[[], float]) -> None:
        self.host, self._audit, self._runs, self._clock = host, audit, runs, clock

    def announce(self, flags: dict[str, FlagValue], log_path: str, fallback: str) -> str:
        """The new run's id from the RunSink (`fallback` if the sink fails)."""
        try:
            return str(self._runs.run_started(self.host, flags, log_path, self._clock()))
        except Exception:
            log.exception("%s: RunSink.run_started failed; run id %s used instead", self.host, fallback)
            return fallback

    def ended(self, run_id: str, reason: str) -> None:
        try:
            self._runs.run_ended(self.host, run_id, self._clock(), reason)
        except Exception:
            log.exception("%s: RunSink.run_ended failed for %s", self.host, run_id)

    def audit(self, record: RestartRecord) -> None:
        try:
            self._audit.record_restart(record)
        except Exception:
            log.exception("%s: AuditSink.record_restart failed", self.host)
