"""Sequential catch-up reads over one streaming exec (`tail -c +N -- path`, maybe through gzip).

SFTP reads are 32 KiB round trips (~8 MB/s), and opening an exec channel per chunk pays the remote
login shell's start-up each time (300 ms with a conda/pyenv .bashrc). One streaming `tail -c +N`
per catch-up reads at exec speed; the tail consumes it chunk by chunk.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Protocol

from kvwatch.collectors.base import StreamClosed

KEEP = 4096  # bytes kept behind the position: the tail re-reads its marker before each chunk


class ByteStream(Protocol):
    what: str

    def read(self, timeout: float) -> bytes | None: ...

    def close(self) -> None: ...


class ReadCursor:
    """`budget`: file bytes after which the cursor is `spent` (the caller then opens a new one);
    `delivered` and `busy` (seconds spent waiting on the stream) give its throughput."""

    def __init__(self, stream: ByteStream, path: str, offset: int, inode: int, timeout: float,
                 *, mode: str = "plain", budget: int | None = None) -> None:
        self.stream = stream
        self.path = path
        self.inode = inode
        self.pos = offset  # file offset of the next byte the stream will deliver
        self.timeout = timeout
        self.mode = mode
        self.budget = budget
        self.eof = False
        self.delivered = 0
        self.busy = 0.0
        self._behind = b""  # the last bytes before pos
        self._ahead: deque[bytes] = deque()  # received, not yet handed out

    @property
    def spent(self) -> bool:
        return self.budget is not None and self.delivered >= self.budget

    def serves(self, path: str, offset: int) -> bool:
        return not self.eof and path == self.path and self.pos - len(self._behind) <= offset <= self.pos

    def read(self, offset: int, length: int) -> bytes:
        back = self._behind[len(self._behind) - (self.pos - offset) :] if offset < self.pos else b""
        want = length - len(back)
        parts, got = [back], 0
        started = time.perf_counter()
        while got < want:
            if not self._ahead and not self._receive():
                break
            chunk = self._ahead.popleft()
            if len(chunk) > want - got:  # split the last chunk only: one copy of the whole read
                self._ahead.appendleft(chunk[want - got :])
                chunk = chunk[: want - got]
            parts.append(chunk)
            got += len(chunk)
        self.busy += time.perf_counter() - started
        out = b"".join(parts)
        self.pos += got
        self.delivered += got
        self._behind = (self._behind + out[max(len(back), len(out) - KEEP) :])[-KEEP:]
        return out

    def _receive(self) -> bool:
        """Wait for the next bytes of the stream; False at its end."""
        if self.eof:
            return False
        chunk = self.stream.read(self.timeout)
        if chunk is None:
            raise StreamClosed(f"{self.stream.what}: catch-up read stalled for {self.timeout:g} s")
        if not chunk:
            self.eof = True
            return False
        self._ahead.append(chunk)
        return True

    def close(self) -> None:
        self.stream.close()
