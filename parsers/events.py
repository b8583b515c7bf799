"""Event lines and multi-line tracebacks, shared by the server and client parsers.

A single line names its event by a fixed phrase (docs/records.md: ready, retract, exception,
watchdog_timeout, oom, crash, error). A traceback is kept together as one event: the block opens
on `Traceback (most recent call last):` (alone or after `Scheduler hit an exception: `) and takes the
frame lines, the exception line, and chained tracebacks; it closes at the first line that belongs to
none of these. Lines of other processes written in between (SGLang ranks share one log) pass through
without closing it. vLLM repeats its prefix on every line of a message, so there the prefix does
not mark a new message (`repeated_headers`).
"""

from __future__ import annotations

from typing import Literal

from kvwatch.parsers.base import ParseHealth, Record
from kvwatch.parsers.requestlog import before_quotes
from kvwatch.parsers.values import split_pairs

# Order matters: the first phrase found names the event.
EVENT_PHRASES: tuple[tuple[str, str], ...] = (
    ("The server is fired up and ready to roll", "ready"),
    ("KV cache pool is full. Retract requests", "retract"),
    ("Decode out of memory happened", "retract"),
    ("hit an exception", "exception"),
    ("atchdog timeout (", "watchdog_timeout"),
    ("Watchdog caught collective operation timeout", "watchdog_timeout"),
    ("CUDA out of memory", "oom"),
    ("OutOfMemoryError", "oom"),
    ("Not enough memory", "oom"),
    ("Not enough host memory", "oom"),
    ("out of memory. Try to lower", "oom"),
    ("Received sigquit from a child process", "crash"),
    ("SIGQUIT received", "crash"),
    ("crashed with exit code", "crash"),
    ("terminate called after throwing", "crash"),
    ("Initialization failed", "error"),
    ("Health check failed", "error"),
    ("memory leak detected", "error"),
)
TRACEBACK = "Traceback (most recent call last)"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_OOM_PHRASES = tuple(phrase for phrase, event in EVENT_PHRASES if event == "oom")
MAX_LINES = 400
MAX_TEXT = 65536
MAX_MESSAGE = 2000
_MAX_PASSED = 100

Verdict = Literal["take", "pass", "end"]


def event_of(message: str) -> str | None:
    """The event a one-line message announces, or None. Only the engine's own words count: a phrase
    after the message's first quote is quoted text (parsers.requestlog.before_quotes)."""
    if message.strip() == "Killed":
        return "crash"
    own = before_quotes(message)
    for phrase, event in EVENT_PHRASES:
        if phrase in own:
            return event
    return None


def event_record(
    line_no: int, ts: str | None, tags: dict[str, int], event: str, message: str, tz: str | None = None
) -> Record:
    record: Record = {"kind": "event", "line": line_no}
    if ts is not None:
        record["ts"] = ts
    if tz is not None:
        record["tz"] = tz
    record["tags"] = tags
    record["event"] = event
    record["message"] = message.strip()[:MAX_MESSAGE]
    if event == "retract" and "#" in message:
        record.update(split_pairs(message[message.index("#") :].rstrip(". ")))
    return record


class TracebackBlock:
    """One traceback being collected; `offer` says what to do with the next line."""

    def __init__(self, record: Record, first: str, repeated_headers: bool) -> None:
        self.record = record
        self.lines = [first.rstrip()]
        self.in_frames = TRACEBACK in first
        self.repeated_headers = repeated_headers
        self.passed = 0

    def offer(self, message: str, has_header: bool) -> Verdict:
        if len(self.lines) >= MAX_LINES or self.passed >= _MAX_PASSED:
            return "end"
        stripped = message.strip()
        if self.in_frames:
            if not stripped or message[0] in " \t":
                return self._take(message)
            if has_header and not self.repeated_headers:
                self.passed += 1
                return "pass"
            self.in_frames = False
            return self._take(message)
        if not stripped or stripped.startswith(_CHAINED):
            return self._take(message)
        if stripped.startswith(TRACEBACK):
            self.in_frames = True
            return self._take(message)
        return "end"

    def _take(self, message: str) -> Verdict:
        self.lines.append(message.rstrip())
        return "take"

    def finish(self) -> Record:
        while len(self.lines) > 1 and not self.lines[-1].strip():
            self.lines.pop()
        record = self.record
        exception = next((line for line in reversed(self.lines) if line and line[0] not in " \t"), "")
        record["exception"] = exception.strip()[:MAX_MESSAGE]
        record["traceback"] = "\n".join(self.lines)[:MAX_TEXT]
        if record["event"] == "error" and record["message"].startswith(TRACEBACK):
            record["message"] = record["exception"]
            if any(phrase in exception for phrase in _OOM_PHRASES):
                record["event"] = "oom"
        return record


def open_block(
    line_no: int, ts: str | None, tags: dict[str, int], message: str, repeated_headers: bool = False,
    tz: str | None = None,
) -> TracebackBlock | None:
    """A block when `message` starts a traceback (or announces one), else None."""
    event = event_of(message)
    if TRACEBACK not in message and event != "exception":
        return None
    record = event_record(line_no, ts, tags, event or "error", message, tz)
    return TracebackBlock(record, message, repeated_headers)


class TracebackMixin:
    """Log parsers with multi-line tracebacks: `feed` never raises and counts into `health`;
    subclasses implement `_feed`, which calls `_through_block` first."""

    _block: TracebackBlock | None = None
    health: ParseHealth

    def feed(self, line_no: int, text: str) -> list[Record]:
        health = self.health
        health.lines += 1
        unparsed = health.unparsed
        try:
            records = self._feed(line_no, text)
        except Exception:  # never raise: one odd line must not stop the stream
            health.unparsed += 1
            records = []
        health.records += len(records)
        if health.unparsed != unparsed:
            health.note_unparsed(line_no, text)
        return records

    def flush(self) -> list[Record]:
        records = self._flush_block()
        self.health.records += len(records)
        return records

    def _feed(self, line_no: int, text: str) -> list[Record]:
        raise NotImplementedError

    def _through_block(self, message: str, has_header: bool) -> tuple[list[Record], bool]:
        """(records finished by this line, whether the line was consumed by the block)."""
        block = self._block
        if block is None:
            return [], False
        verdict = block.offer(message, has_header)
        if verdict == "take":
            return [], True
        if verdict == "pass":
            return [], False
        self._block = None
        return [block.finish()], False

    def _flush_block(self) -> list[Record]:
        block, self._block = self._block, None
        return [] if block is None else [block.finish()]
