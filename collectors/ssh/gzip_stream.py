"""Catch-up streams compressed on the host: `tail -c +N -- path | gzip -1`, inflated here.

SGLang logs shrink ~6x under `gzip -1`, which runs at ~120 MB/s on one remote core. Where the link
(or the SSH cipher on a slow client) is the limit, that is up to 6x more file bytes per second; where
CPU is the limit (loopback, a busy box) it is slower than the plain stream. `catchup.py` decides
by measurement; this module only makes the compressed stream exact:

- the inflated bytes are the file's bytes, byte for byte: gzip's trailer (CRC-32 and length) is
  checked by zlib at the end of the stream (`wbits=31`), and SSH's MAC guards every packet before;
- a stream that ends before the gzip trailer (gzip missing, killed, out of memory), a corrupt
  stream or bytes after the trailer raise `CompressionFailed`; the caller then re-reads the same
  range plain, so no byte is lost or delivered twice;
- inflating is bounded (`OUT_MAX` per call), so a file of zeros cannot blow up memory.

Only standard tools run on the host: POSIX `sh`, `tail` and `gzip`. Values reach the shell only as
positional parameters of a constant script, and the whole argv is shell-quoted.
"""

from __future__ import annotations

import zlib

from kvwatch.collectors.base import StreamClosed
from kvwatch.collectors.ssh.exec_channel import ExecStream

# $1 = "+N" (1-based start), $2 = the path: never spliced into the script text
GZIP_SCRIPT = 'tail -c "$1" -- "$2" | gzip -1'
HAS_GZIP = ["sh", "-c", "command -v gzip"]
OUT_MAX = 4 << 20  # inflated bytes per read(): a highly compressible file stays bounded in memory


class CompressionFailed(StreamClosed):
    """The compressed stream is unusable; the same range can be read plain."""


def plain_argv(path: str, offset: int) -> list[str]:
    return ["tail", "-c", f"+{offset + 1}", "--", path]


def gzip_argv(path: str, offset: int) -> list[str]:
    return ["sh", "-c", GZIP_SCRIPT, "sh", f"+{offset + 1}", path]


class GzipStream:
    """An ExecStream of gzip data read as the plain bytes it encodes (same `read` contract)."""

    def __init__(self, stream: ExecStream) -> None:
        self.stream = stream
        self.what = stream.what
        self.wire_bytes = 0  # compressed bytes received (for the compression ratio)
        self._inflate = zlib.decompressobj(wbits=31)  # 31: gzip header and trailer required
        self._pending = b""  # received, not yet inflated (OUT_MAX reached)

    def read(self, timeout: float) -> bytes | None:
        """Next file bytes; None when nothing arrived within `timeout`; b"" after a verified end."""
        while True:
            if self._pending:
                out = self._inflate_some()
                if out:
                    return out
                continue
            chunk = self.stream.read(timeout)
            if chunk is None:
                return None
            if not chunk:
                return self._end()
            self.wire_bytes += len(chunk)
            self._pending = chunk

    def _inflate_some(self) -> bytes:
        try:
            out = self._inflate.decompress(self._pending, OUT_MAX)
        except zlib.error as exc:
            raise CompressionFailed(f"{self.what}: corrupt gzip stream ({exc})") from exc
        self._pending = self._inflate.unconsumed_tail
        if self._inflate.unused_data:
            raise CompressionFailed(f"{self.what}: data after the end of the gzip stream")
        return out

    def _end(self) -> bytes:
        if not self._inflate.eof:
            err = self.stream.stderr().decode(errors="replace").strip().splitlines()
            detail = f": {err[-1]}" if err else ""
            raise CompressionFailed(f"{self.what}: gzip stream ended before its trailer{detail}")
        return b""

    def stderr(self) -> bytes:
        return self.stream.stderr()

    def close(self) -> None:
        self.stream.close()
