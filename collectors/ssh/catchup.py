"""Large reads over SSH: one streaming cursor per connection, plain or gzip-compressed.

Which stream is faster depends on where the bottleneck is, and that is not knowable in advance:
on a LAN or loopback with free CPU the plain stream wins (gzip -1 tops out at ~120 MB/s on one
remote core); over a slow or shared link, or where the SSH cipher is the limit, gzip's ~6x on logs
wins. So `auto` measures: with plenty left to read it times a short plain run and a short gzip run
on this connection, streams the faster one for up to `RUN` bytes, and then re-times the other,
because load and links change. Small remainders are always read plain: a compressed stream pays
gzip's start and output buffering for little gain, and live reads must stay prompt.

Nothing here changes which bytes are delivered: both streams yield the file's bytes from the same
offset, and a failed compressed stream is replaced by a plain one reading the same range again.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Literal, Protocol

from kvwatch.collectors.base import CommandResult, FileStat
from kvwatch.collectors.ssh.cursor import ByteStream, ReadCursor
from kvwatch.collectors.ssh.errors import map_ssh_errors
from kvwatch.collectors.ssh.exec_channel import ExecStream
from kvwatch.collectors.ssh.gzip_stream import HAS_GZIP, CompressionFailed, GzipStream, gzip_argv, plain_argv

log = logging.getLogger(__name__)

Compression = Literal["auto", "gzip", "off"]
COMPRESS_MIN = 32 << 20  # remaining bytes from which gzip is considered
PROBE = 32 << 20  # file bytes read to time a stream kind
RUN = 1 << 30  # file bytes streamed with the winner before the loser is timed again
MIN_SAMPLE = 4 << 20  # a cursor that delivered less says nothing about throughput
CHECK_BYTES = 256  # end of each delivered chunk compared with the file as it is now


class CatchupHost(Protocol):
    name: str

    def stat(self, path: str) -> FileStat: ...

    def read(self, path: str, offset: int, length: int) -> bytes: ...

    def open_stream(self, argv: list[str], pty: bool = False, bulk: bool = False) -> ExecStream: ...

    def run(self, argv: list[str], timeout: float = 30.0, stdin: bytes = b"") -> CommandResult: ...


@dataclass
class CatchupStats:
    plain_bytes: int = 0  # file bytes delivered by plain streams
    gzip_bytes: int = 0  # file bytes delivered by gzip streams
    gzip_wire_bytes: int = 0  # what those cost on the wire
    fallbacks: int = 0  # gzip streams that failed and were re-read plain


class StreamChoice:
    """Plain or gzip for the next cursor, from the throughput each kind last showed here."""

    def __init__(self, compression: Compression) -> None:
        self.compression = compression
        self.gzip_ok: bool | None = None  # None: not asked yet; False after any gzip failure
        self.rates: dict[str, float] = {}  # kind -> file bytes per second while streaming

    def choose(self, remaining: int, host: CatchupHost) -> tuple[str, int | None]:
        """(kind, budget): the stream to open and how many bytes it may deliver (None: to the end).
        `gzip` compresses every streaming read whatever is left (tests, benchmarks)."""
        if self.compression == "off" or (self.compression == "auto" and remaining < COMPRESS_MIN):
            return "plain", None
        if not self._has_gzip(host):
            return "plain", None
        if self.compression == "gzip":
            return "gzip", None
        for kind in ("plain", "gzip"):
            if kind not in self.rates:
                return kind, PROBE
        best = max(self.rates, key=lambda kind: self.rates[kind])
        self.rates = {best: self.rates[best]}  # the other is timed again after this run
        return best, RUN

    def record(self, cursor: ReadCursor) -> None:
        if cursor.delivered >= MIN_SAMPLE and cursor.busy > 0:
            self.rates[cursor.mode] = cursor.delivered / cursor.busy

    def _has_gzip(self, host: CatchupHost) -> bool:
        if self.gzip_ok is None:  # once per connection; a failure later turns it off again
            done = host.run(HAS_GZIP, timeout=10.0)
            self.gzip_ok = done.exit_status == 0 and bool(done.stdout.strip())
        return self.gzip_ok


class Catchup:
    """`read(path, offset, length)` for lengths too large for SFTP; thread-safe."""

    def __init__(self, host: CatchupHost, compression: Compression, timeout: float) -> None:
        self.host = host
        self.timeout = timeout
        self.choice = StreamChoice(compression)
        self.stats = CatchupStats()
        self._cursor: ReadCursor | None = None
        self._lock = threading.Lock()

    def read(self, path: str, offset: int, length: int) -> bytes:
        with self._lock:
            cursor = self._cursor
            if cursor is None or not cursor.serves(path, offset) or self.host.stat(path).inode != cursor.inode:
                cursor = self._reopen(path, offset)
            try:
                data = self._read(cursor, offset, length)
            except CompressionFailed as exc:
                # the bytes handed out before were exact (inflated deflate, MAC-checked packets);
                # this range is read again plain, and gzip stays off on this connection
                log.warning("%s; reading plain from now on", exc)
                self.choice.gzip_ok = False
                self.stats.fallbacks += 1
                cursor = self._reopen(path, offset)
                data = self._read(cursor, offset, length)
            if not self._current(path, offset, data):
                self._drop()  # read ahead before an in-place rewrite: read this range afresh
                data = self._read(self._reopen(path, offset), offset, length)
            if self._cursor is not None and (self._cursor.eof or self._cursor.spent):
                self._drop()
            return data

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _current(self, path: str, offset: int, data: bytes) -> bool:
        """Does the file still hold both ends of `data`? A stream runs megabytes ahead of what it
        hands out (pipes, the SSH window; x6 through gzip), so bytes served from it may predate a
        truncate-and-rewrite of the same inode; the tail's own look-back check would be answered
        from those same stale bytes. A chunk can be stale at its start (what was read ahead) and
        fresh at its end (read after the rewrite), so both ends are read again, by SFTP: two small
        reads per chunk."""
        k = min(len(data), CHECK_BYTES)
        if k == 0:
            return True
        return (self.host.read(path, offset, k) == data[:k]
                and self.host.read(path, offset + len(data) - k, k) == data[-k:])

    def _read(self, cursor: ReadCursor, offset: int, length: int) -> bytes:
        with map_ssh_errors(f"{self.host.name}:{cursor.path}"):
            return cursor.read(offset, length)

    def _reopen(self, path: str, offset: int) -> ReadCursor:
        self._drop()
        st = self.host.stat(path)  # raises SourceMissing
        kind, budget = self.choice.choose(st.size - offset, self.host)
        if kind == "gzip":
            stream: ByteStream = GzipStream(self.host.open_stream(gzip_argv(path, offset), bulk=True))
        else:
            stream = self.host.open_stream(plain_argv(path, offset), bulk=True)
        self._cursor = ReadCursor(stream, path, offset, st.inode, self.timeout, mode=kind, budget=budget)
        return self._cursor

    def _drop(self) -> None:
        cursor, self._cursor = self._cursor, None
        if cursor is None:
            return
        self.choice.record(cursor)
        if isinstance(cursor.stream, GzipStream):
            self.stats.gzip_bytes += cursor.delivered
            self.stats.gzip_wire_bytes += cursor.stream.wire_bytes
        else:
            self.stats.plain_bytes += cursor.delivered
        cursor.close()
