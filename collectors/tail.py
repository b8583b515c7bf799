"""Follow one file on a transport and hand out complete lines with the offset to resume from.

First slice: polling by stat + read. Identity is the inode; a different inode or a file shorter than
the saved offset starts a new generation from byte 0. The collectors issue hardens this (head
fingerprint, draining a renamed file, streaming over SSH).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from collectors.base import FileStat, Line, SourceMissing, Transport

READ_CHUNK = 8 << 20


@dataclass(frozen=True, slots=True)
class TailState:
    """Where a tail stands: commit it together with the records of the lines before it."""

    generation: int = 0
    inode: int = 0
    offset: int = 0
    line_no: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TailState:
        if not data:
            return cls()
        known = {k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class Tail:
    def __init__(self, transport: Transport, path: str, source: str, state: TailState | None = None) -> None:
        self.transport = transport
        self.path = path
        self.source = source
        self.state = state or TailState()

    def poll(self) -> list[Line]:
        """Complete lines appended since the last poll; `self.state` then stands after the last one."""
        try:
            stat = self.transport.stat(self.path)
        except SourceMissing:
            return []
        self._follow_identity(stat)
        if stat.size <= self.state.offset:
            return []
        data = self.transport.read(self.path, self.state.offset, min(READ_CHUNK, stat.size - self.state.offset))
        end = data.rfind(b"\n")
        if end < 0:
            return []
        return self._split(data[: end + 1])

    def _follow_identity(self, stat: FileStat) -> None:
        if self.state.inode == 0 and self.state.offset == 0:
            self.state = replace(self.state, inode=stat.inode)
        elif stat.inode != self.state.inode or stat.size < self.state.offset:
            self.state = TailState(generation=self.state.generation + 1, inode=stat.inode)

    def _split(self, data: bytes) -> list[Line]:
        lines: list[Line] = []
        offset, line_no = self.state.offset, self.state.line_no
        for raw in data.split(b"\n")[:-1]:
            offset += len(raw) + 1
            line_no += 1
            text = raw.decode("utf-8", errors="replace").rstrip("\r")
            lines.append(Line(self.source, self.state.generation, offset, line_no, text))
        self.state = replace(self.state, offset=offset, line_no=line_no)
        return lines
