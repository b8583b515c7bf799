"""Where a followed file stands: bytes in, complete Lines out, and the TailState that resumes there.

`LineSplitter` holds the partial last line and keeps memory bounded. A line longer than `max_line`
bytes keeps its first `max_line` bytes as text and drops the rest (counted in `truncated_lines`);
its offset and number stay exact, so nothing after it shifts and tailing never stops. 1 MiB is far
above any SGLang/vLLM log line or one JSONL completion we have seen, and keeps one pathological line
from holding more than 1 MiB per followed file. Invalid UTF-8 is decoded with U+FFFD replacements
(counted in `replaced_lines`); a trailing "\\r" (CRLF files) is dropped.

`TailState` is a splitter's position (generation, offset, line number) made durable: committed by
the store with the records it covers. Identity of the file behind the path = inode + a fingerprint
of its first bytes (up to 1 KiB, growing while the file is young) + a marker: the hash of the bytes
just before `offset`. The marker is what notices a file truncated and regrown past the old offset
while we were away.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace
from itertools import accumulate, count, repeat
from operator import add
from typing import Any

from kvwatch.collectors.base import Line

MAX_LINE_BYTES = 1 << 20
_REPLACEMENT = "\ufffd"
_REPLACEMENT_BYTES = _REPLACEMENT.encode()
HEAD_BYTES = 1024
MARKER_BYTES = 64


class LineSplitter:
    def __init__(self, source: str, generation: int, offset: int, line_no: int,
                 max_line: int = MAX_LINE_BYTES) -> None:
        self.source = source
        self.generation = generation
        self.offset = offset  # resumable offset: just past the last complete line
        self.line_no = line_no
        self.read_pos = offset  # next byte of the file to feed
        self.max_line = max_line
        self.truncated_lines = 0
        self.replaced_lines = 0
        self._frag = bytearray()  # kept bytes of the unfinished line
        self._dropped = 0  # bytes of the unfinished line beyond max_line

    @property
    def pending(self) -> int:
        """Bytes read past the resumable offset (the unfinished line)."""
        return self.read_pos - self.offset

    def feed(self, data: bytes) -> list[Line]:
        base = self.read_pos
        self.read_pos += len(data)
        first = data.find(b"\n")
        if first < 0:
            self._hold(data)
            return []
        lines: list[Line] = []
        if self._frag or self._dropped:
            self._hold(data[:first])
            self._emit(lines, bytes(self._frag), base + first + 1, self._dropped > 0)
            self._frag.clear()
            self._dropped = 0
            start = first + 1
        else:
            start = 0
        last = data.rfind(b"\n")
        if last >= start:
            body = data[start:last]
            if not self._emit_plain(lines, body, base + start):
                self._emit_many(lines, body.split(b"\n"), base + start)
        self._hold(data[last + 1:])
        return lines

    def _emit_plain(self, out: list[Line], body: bytes, end: int) -> bool:
        """A catch-up's usual block (ASCII, no CR, no line over the limit) split and wrapped by C
        iterators: no Python code runs per line. False, with nothing emitted, for any other block."""
        if not body.isascii() or b"\r" in body:
            return False
        texts = body.decode("ascii").split("\n")
        if max(map(len, texts)) > self.max_line:
            return False
        ends = accumulate(map(add, map(len, texts), repeat(1)), add, initial=end)
        next(ends)
        fields = zip(repeat(self.source), repeat(self.generation), ends, count(self.line_no + 1), texts)
        out.extend(map(tuple.__new__, repeat(Line), fields))
        self.line_no += len(texts)
        self.offset = end + len(body) + 1
        return True

    def _emit_many(self, out: list[Line], parts: list[bytes], end: int) -> None:
        """Line by line, for blocks `_emit_plain` does not take (non-ASCII, CR, over-long lines)."""
        new, source, generation, line_no = tuple.__new__, self.source, self.generation, self.line_no
        for raw in parts:
            end += len(raw) + 1
            if len(raw) > self.max_line or raw.endswith(b"\r") or not raw.isascii():
                self.line_no = line_no
                self._emit(out, raw[: self.max_line], end, len(raw) > self.max_line)
                line_no = self.line_no
                continue
            line_no += 1
            out.append(new(Line, (source, generation, end, line_no, raw.decode())))
        self.line_no = line_no
        if parts:
            self.offset = end

    def _hold(self, data: bytes) -> None:
        room = self.max_line - len(self._frag)
        if len(data) <= room:
            self._frag += data
        else:
            self._frag += data[:room]
            self._dropped += len(data) - room

    def _emit(self, out: list[Line], raw: bytes, end: int, truncated: bool) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        text = raw.decode("utf-8", "replace")
        if _REPLACEMENT in text and _REPLACEMENT_BYTES not in raw:
            self.replaced_lines += 1
        if truncated:
            self.truncated_lines += 1
        self.line_no += 1
        self.offset = end
        out.append(Line(self.source, self.generation, end, self.line_no, text))

    def flush(self) -> list[Line]:
        """Emit the unfinished line as if complete (an old generation that will never grow again)."""
        if not self._frag and not self._dropped:
            return []
        out: list[Line] = []
        self._emit(out, bytes(self._frag), self.read_pos, self._dropped > 0)
        self._frag.clear()
        self._dropped = 0
        return out


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class DrainState:
    """An older generation still being read: after a rename rotation (the writer may lag), or from
    the copy a copytruncate left (`inode` is then the copy's)."""

    generation: int
    inode: int
    offset: int
    line_no: int


@dataclass(frozen=True, slots=True)
class TailState:
    """generation 0 (the default) means "nothing followed yet"."""

    generation: int = 0
    inode: int = 0
    offset: int = 0  # resumable: just past the last complete line
    line_no: int = 0  # complete lines in this generation
    fingerprint: str = ""  # digest of the first head_len bytes
    head_len: int = 0
    marker: str = ""  # digest of bytes [offset - min(offset, MARKER_BYTES), offset)
    draining: DrainState | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready; the store keeps it as is and gives it back to `from_dict`."""
        return asdict(self)

    to_dict = as_dict

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TailState:
        """Unknown keys are ignored (older/newer kvwatch); missing ones take their defaults."""
        if not data:
            return cls()
        names = set(cls.__dataclass_fields__) - {"draining"}
        fields = {k: v for k, v in data.items() if k in names}
        drain = data.get("draining")
        return cls(**fields, draining=DrainState(**drain) if drain else None)

    def with_(self, **changes: Any) -> TailState:
        return replace(self, **changes)
