"""The parser contract.

A parser turns the lines of one stream (one file, in order) into records. It is pure: no I/O, no
logging, no clock, and it never raises, whatever the input (garbage, NUL bytes, a 10 MB line).
It may keep state between lines of the same stream (a multi-line traceback, a CSV header); one
instance serves one stream, so state never leaks between files.

A record is a plain dict: `kind` and `line` (1-based line number in its file) always, `ts` (ISO-8601
without zone, exactly as logged) where the line has one, then the fields of that kind
(docs/records.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

Record = dict[str, Any]
SAMPLE_CHARS = 300


@dataclass(slots=True)
class ParseHealth:
    """What a parser has seen of its stream, for the dashboard's parse-health view."""

    lines: int = 0
    records: int = 0
    unparsed: int = 0  # lines that are not this source's format, or whose values could not be read
    access: int = 0  # HTTP access lines: recognised and counted, never records
    ignored: int = 0  # well-formed log lines with nothing to record (startup chatter, INFO lines)
    unknown_keys: int = 0  # `key: value` parts whose key is no field name (parsers.values.field_key)
    # The first unparsed line (cut to SAMPLE_CHARS) and its number: what to look at when `unparsed`
    # grows. Not in as_dict(), which stays the counts.
    sample: str | None = None
    sample_line: int = 0

    def note_unparsed(self, line_no: int, text: str) -> None:
        if self.sample is None:
            self.sample, self.sample_line = text[:SAMPLE_CHARS], line_no

    def as_dict(self) -> dict[str, int]:
        return {
            "lines": self.lines,
            "records": self.records,
            "unparsed": self.unparsed,
            "access": self.access,
            "ignored": self.ignored,
            "unknown_keys": self.unknown_keys,
        }


class LineParser(Protocol):
    """One stream's parser. `feed` never raises; `flush` emits whatever is still held."""

    name: ClassVar[str]
    health: ParseHealth

    def feed(self, line_no: int, text: str) -> list[Record]: ...

    def flush(self) -> list[Record]: ...
