"""What a host loop hands its lines to: the store's sink in the app, raw sinks in the collector tests."""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

from kvwatch.collectors.base import Line
from kvwatch.collectors.clock import FileProbe
from kvwatch.collectors.clock_infer import HostClock
from kvwatch.collectors.lines import TailState


class Delivered(NamedTuple):
    """What a parsing sink made of a delivery, for the source's health."""

    records: int
    unparsed: int
    unknown_keys: int = 0  # `key: value` parts whose key was no field name (never a series)


class ClockStepSuspected(Exception):
    """A sink met a line stamped as if the host's clock had stepped: nothing of the delivery was stored;
    the follower rewinds, reads the host's clock again and calls `clock_checked`, then the lines come again."""


class Sink(Protocol):
    def load_state(self, host: str, kind: str, path: str) -> TailState | None: ...

    def deliver(self, host: str, kind: str, path: str, lines: list[Line],
                state: TailState | None) -> Delivered | None:
        """Store `lines` and `state` atomically (state None: live samples, nothing to resume)."""
        ...

    def idle(self, host: str, kind: str, path: str) -> None:
        """The file had nothing new this round (a parser may end what it held, e.g. a traceback)."""
        ...


@runtime_checkable
class ClockSink(Protocol):
    """A sink that places naive stamps in time (app/pipeline/stamps.py): it is told what the host's
    clock and each file's newest lines say, and reports how each source's offset was found."""

    def observe_clock(self, kind: str, path: str, host: HostClock | None, probe: FileProbe | None,
                      resume_offset: int = 0) -> dict[str, Any]: ...

    def clock_report(self, kind: str, path: str) -> dict[str, Any] | None: ...

    def retime(self, host: HostClock) -> None: ...

    def clock_suspect(self) -> bool:
        """Lines wait for the host's clock to be read again (the host loop reads it at once)."""
        ...

    def clock_checked(self) -> None:
        """The host's clock was read again (or could not be): the waiting lines are taken as they come."""
        ...
