"""Mark a catch-up: lines a file gained while nobody read it (kvwatch down, host unreachable).

Their samples sit at the file's mtime (or their own stamps), never at the time of reading; the
`catchup` event says which byte range was read late and by when it had appeared, so a reader of
the series knows the step at that point was not observed as a rate. Stored once per backlog.
"""

from __future__ import annotations

from kvwatch.app.pipeline.stamps import SourceClock
from kvwatch.app.store.base import Batch, EventRow
from kvwatch.collectors.base import Line

CATCHUP_EVENT = "catchup"
# A delivery this long is a backlog read in large pieces, not lines as they come: the columnar path
# (app/pipeline/columns.py) takes it.
BULK_LINES = 4096


def mark_catch_up(batch: Batch, clock: SourceClock, lines: list[Line]) -> None:
    backlog = clock.backlog
    if backlog is None or not backlog.behind or clock.backlog_marked:
        return
    if lines[0].offset > backlog.size:  # only lines written after the connect: live, not a backlog
        return
    clock.backlog_marked = True
    appeared_by = backlog.mtime - clock.skew_correction_s
    data = {"path": batch.path, "from_offset": backlog.resume_offset,
            "to_offset": backlog.size, "bytes": backlog.size - backlog.resume_offset, "appeared_by": appeared_by}
    batch.events.append(EventRow(CATCHUP_EVENT, appeared_by, lines[0].line_no, data))
