"""Output JSONL files -> `completions` (`file`, `count`).

Every complete non-blank line is one completion. The caller feeds complete lines only: a partial
last line (no newline yet) is not fed, so it is not counted until it ends. `feed` only counts;
`flush()` reports the running total as one record (`count` = lines so far, `line` = last line
counted), and only when it changed since the last flush (the first flush always reports, so a
new file shows 0). Call flush() after each batch of lines, as often as you like.
"""

from __future__ import annotations

from typing import ClassVar

from kvwatch.parsers.base import ParseHealth, Record


class OutputsParser:
    name: ClassVar[str] = "outputs"

    def __init__(self, file: str = "") -> None:
        self.health = ParseHealth()
        self.file = file
        self.count = 0
        self._last_line = 0
        self._reported: int | None = None

    def feed(self, line_no: int, text: str) -> list[Record]:
        self.health.lines += 1
        if text.strip():
            self.count += 1
            self._last_line = line_no
        return []

    def flush(self) -> list[Record]:
        if self._reported == self.count:
            return []
        self._reported = self.count
        self.health.records += 1
        return [{"kind": "completions", "line": self._last_line, "file": self.file, "count": self.count}]
