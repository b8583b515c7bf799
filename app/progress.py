"""A one-line progress display for long offline work (parsing a big log, exporting a long history).

Shown only when the stream (stderr by default) is a terminal: in a pipe, a log file, CI or
`docker logs` it writes nothing, so output stays plain lines. No dependency: tqdm is for clients.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

MIN_INTERVAL_S = 0.2  # at most five redraws a second: drawing must not slow the work down


class Progress:
    def __init__(self, label: str, total: float | None = None, unit: str = "", stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0.0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream)
        self._drawn_at = 0.0
        self._width = 0

    def advance(self, amount: float = 1.0) -> None:
        self.done += amount
        now = time.monotonic()
        if self.enabled and now - self._drawn_at >= MIN_INTERVAL_S:
            self._drawn_at = now
            self._draw()

    def clear(self) -> None:
        """Blank the line, so a message can be printed; the next advance draws again."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
            self._drawn_at = 0.0

    def close(self) -> None:
        if self.enabled and self._width:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def text(self) -> str:
        done = _human(self.done, self.unit)
        if not self.total:
            return f"{self.label}: {done}"
        share = min(1.0, self.done / self.total)
        bar = "#" * int(share * 20)
        return f"{self.label}: [{bar:<20}] {share:4.0%} {done}/{_human(self.total, self.unit)}"

    def _draw(self) -> None:
        line = self.text()
        self.stream.write("\r" + line + " " * max(0, self._width - len(line)))
        self.stream.flush()
        self._width = len(line)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False


def _human(value: float, unit: str) -> str:
    if unit != "B":
        return f"{value:,.0f}{' ' + unit if unit else ''}"
    for suffix in ("B", "KB", "MB", "GB"):
        if value < 1024 or suffix == "GB":
            return f"{value:.0f} {suffix}" if suffix == "B" else f"{value:.1f} {suffix}"
        value /= 1024
    return f"{value:.1f} GB"
