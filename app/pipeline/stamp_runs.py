"""Where a published point stands among the host's points of the same stamp.

SGLang stamps whole seconds, so a fast decode (or a short --decode-log-interval) logs several lines
in one second: distinct samples with equal stamps. A page that holds some of a stamp's points (from
history) and is streamed more of them tells old from new by position, not by time: the stream says,
per metric, how many points of its first point's stamp came before it (`stamp_index`). A stamp's
points are counted in publishing order, which is the store's commit order, as a run of consecutive
equal stamps (the page counts the same way: the points its trace ends with). A backlog batch
publishes its series thinned (sink.py's PUBLISH_POINTS): its positions count the published points,
so at the one stamp where a backlog meets live lines a page may draw a point twice or miss one; a
page open during a catch-up redraws from history when it compacts anyway.

Stamps are compared in whole milliseconds, as the page holds them (a JavaScript Date truncates):
output-file lines stamped 0.2 ms apart are one stamp on the page, so they are one stamp here too.
"""

from __future__ import annotations

import math


def page_stamp(t: float) -> int:
    """A stamp as the page's Date holds it: whole milliseconds, truncated."""
    return math.trunc(t * 1000)


class StampRuns:
    """Per metric: the newest published stamp and how many points carried it in a row."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[int | None, int]] = {}

    def advance(self, metric: str, points: list[list[float]]) -> int:
        """The count of earlier points at `points[0]`'s stamp; then `points` are counted too."""
        if not points:
            return 0
        stamp, count = self._last.get(metric, (None, 0))
        before = count if page_stamp(points[0][0]) == stamp else 0
        for t, _ in points:
            if page_stamp(t) == stamp:
                count += 1
            else:
                stamp, count = page_stamp(t), 1
        self._last[metric] = (stamp, count)
        return before
