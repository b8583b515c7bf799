"""Log timestamps -> epoch seconds. Naive stamps are read as UTC; time-only and year-less stamps
take their missing date parts from `reference_day` (old SGLang logs `[04:40:55 TP0]`, vLLM logs
`INFO 01-22 18:27:20`), and give None without one. Never raises.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

_FULL = re.compile(r"(\d{4})[-/](\d{2})[-/](\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?")
_MONTH_DAY = re.compile(r"(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?")
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?")


def _epoch(year: int, month: int, day: int, hms: tuple[str, str, str], frac: str | None) -> float | None:
    try:
        stamp = datetime(year, month, day, int(hms[0]), int(hms[1]), int(hms[2]), tzinfo=UTC)
    except ValueError:
        return None
    return stamp.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0)


def to_epoch(ts: str, reference_day: date | None = None) -> float | None:
    """`2026-02-24T12:49:14[.123]` -> epoch seconds (UTC); None when it is not a timestamp."""
    if not isinstance(ts, str):
        return None
    ts = ts.strip()
    full = _FULL.fullmatch(ts)
    if full is not None:
        g = full.groups()
        return _epoch(int(g[0]), int(g[1]), int(g[2]), (g[3], g[4], g[5]), g[6])
    if reference_day is None:
        return None
    month_day = _MONTH_DAY.fullmatch(ts)
    if month_day is not None:
        g = month_day.groups()
        return _epoch(reference_day.year, int(g[0]), int(g[1]), (g[2], g[3], g[4]), g[5])
    time_only = _TIME.fullmatch(ts)
    if time_only is not None:
        g = time_only.groups()
        day = reference_day
        return _epoch(day.year, day.month, day.day, (g[0], g[1], g[2]), g[3])
    return None


def iso(day: str | None, clock: str) -> str:
    """Date and clock as logged -> ISO-8601 without zone (`,123` ms becomes `.123`)."""
    clock = clock.replace(",", ".")
    return f"{day.replace('/', '-')}T{clock}" if day else clock
