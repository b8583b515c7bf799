"""A report's events the way a person reads them: a burst of one event is one line with its count and
span ("retract x30, 12:01–12:09"), not thirty lines; and each run of the window with its own events."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kvwatch.app.api.host_status import defining_flags
from kvwatch.app.flags.schema import FlagError, Schema, bundled_versions, load_bundled
from kvwatch.app.runs import Run
from kvwatch.app.terminal.render import flag_words

DETAIL_CHARS = 160


@dataclass(frozen=True, slots=True)
class EventGroup:
    """Consecutive events of one kind: how many, from when to when, and what the first one said."""

    event: str
    count: int
    first: float
    last: float
    detail: str

    def label(self) -> str:
        times = _clock(self.first) if self.count == 1 else f"{_clock(self.first)}–{_clock(self.last)}"
        return f"{self.event}{'' if self.count == 1 else f' x{self.count}'}, {times}"


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run in the window: when, with which of its own flags, and what happened during it."""

    run_id: str
    started_at: float
    ended_at: float | None
    state: str
    flags: str
    events: tuple[EventGroup, ...]


def _clock(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%H:%M")


def _detail(event: dict[str, Any]) -> str:
    return str(event.get("message") or event.get("text") or "")[:DETAIL_CHARS]


def collapse(events: Iterable[dict[str, Any]]) -> list[EventGroup]:
    """Events in time order -> groups of consecutive events of the same kind."""
    groups: list[EventGroup] = []
    for event in events:
        kind, t = str(event.get("event", "?")), float(event["t"])
        if groups and groups[-1].event == kind:
            last = groups[-1]
            groups[-1] = EventGroup(kind, last.count + 1, last.first, t, last.detail)
        else:
            groups.append(EventGroup(kind, 1, t, t, _detail(event)))
    return groups


def newest_schema() -> Schema | None:
    """SGLang's defaults (newest bundled version), to tell a run's own choices from what it logs."""
    versions = bundled_versions()
    try:
        return load_bundled(versions[-1]) if versions else None
    except FlagError:
        return None


def summarize_runs(runs: list[Run], events: list[dict[str, Any]]) -> list[RunSummary]:
    """Each run with the events logged between its start and the next run's, collapsed."""
    schema = newest_schema()
    summaries = []
    for run in runs:
        own = [e for e in events
               if run.started_at <= float(e["t"]) and (run.ended_at is None or float(e["t"]) < run.ended_at)]
        summaries.append(RunSummary(run.id, run.started_at, run.ended_at, run.state,
                                    flag_words(defining_flags(run.flags, schema)), tuple(collapse(own))))
    return summaries
