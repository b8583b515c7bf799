"""The host loop's clock round on every connect: the host's clock, then each file's mtime and newest
lines, handed to the sink (which decides each source's zone, app/pipeline/stamps.py) and shown in
the host's health. A sink that is not a `ClockSink` (the collector tests' raw sinks) is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvwatch.collectors.base import Transport
from kvwatch.collectors.clock import ClockUnread, probe_files, probe_host
from kvwatch.collectors.clock_infer import HostClock
from kvwatch.collectors.health import HostHealth
from kvwatch.collectors.sinks import ClockSink, Sink
from kvwatch.collectors.tail import Tail

STAMPED_KINDS = ("server_log", "client_log")  # output files are JSONL without a line stamp


def host_clock_dict(clock: HostClock | None, unread: ClockUnread | None = None) -> dict[str, Any]:
    """The host-level fields GET /api/hosts shows; `clock` is `unknown` (with `clock_error`) when the
    host's clock could not be read, never a silent UTC."""
    if clock is None:
        return {"utc_offset_s": None, "timezone": None, "clock_skew_s": None, "clock_skew_corrected": False,
                "clock": "unknown", "clock_error": unread.reason if unread else None}
    return {
        "clock": "read", "clock_error": None,
        "utc_offset_s": clock.utc_offset_s,
        "timezone": clock.timezone or clock.abbreviation or None,
        "clock_skew_s": clock.clock_skew_s,
        "clock_skew_corrected": clock.skew_correction_s != 0.0,
    }


def observe_files(transport: Transport, sink: Sink, health: HostHealth, clock: HostClock | None,
                  tails: dict[tuple[str, str], Tail], keys: Iterable[tuple[str, str]]) -> None:
    keys = list(keys)
    if not isinstance(sink, ClockSink) or not keys:
        return
    stamped = frozenset(path for kind, path in keys if kind in STAMPED_KINDS)
    probes = probe_files(transport, sorted({path for _, path in keys}), stamped)
    for kind, path in keys:
        state = tails[(kind, path)].state
        report = sink.observe_clock(kind, path, clock, probes.get(path), state.offset if state else 0)
        health.source(kind, path).clock = report


def refresh_report(sink: Sink, health: HostHealth, kind: str, path: str) -> None:
    """After a delivery: a parser may have met stamps with their own offset (`explicit`)."""
    if isinstance(sink, ClockSink):
        health.source(kind, path).clock = sink.clock_report(kind, path)


def reprobe_host(transport: Transport, sink: Sink, health: HostHealth, clock: HostClock | None,
                 tails: dict[tuple[str, str], Tail]) -> HostClock | None:
    """Read the host's clock again during a long connection: skew drifts on a host without NTP, and
    a zone known only by its offset changes with DST. The sink retimes its sources (`retime`)."""
    fresh = probe_host(transport)
    if isinstance(fresh, ClockUnread):
        if isinstance(sink, ClockSink):
            sink.clock_checked()
        return clock  # the last reading stays: one failed probe during a connection changes nothing
    health.clock = host_clock_dict(fresh)
    if isinstance(sink, ClockSink):
        sink.retime(fresh)
        sink.clock_checked()
        for kind, path in tails:
            refresh_report(sink, health, kind, path)
    return fresh
