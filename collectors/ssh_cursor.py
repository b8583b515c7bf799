"""Sequential catch-up reads over one exec `tail -c +N -- path`.

SFTP reads are 32 KiB round trips (~8 MB/s), and opening an exec channel per chunk pays the remote
login shell's start-up each time (300 ms with a conda/pyenv .bashrc). One streaming `tail -c +N`
per catch-up reads at exec speed; the tail consumes it chunk by chunk.
"""

from __future__ import annotations

from collectors.base import StreamClosed
from collectors.ssh_exec import ExecStream

KEEP = 4096  # bytes kept behind the position: the tail re-reads its marker before each chunk


class ReadCursor:
    def __init__(self, stream: ExecStream, path: str, offset: int, inode: int, timeout: float) -> None:
        self.stream = stream
        self.path = path
        self.inode = inode
        self.pos = offset  # file offset of the next byte the stream will deliver
        self.timeout = timeout
        self.eof = False
        self._behind = b""  # the last bytes before pos
        self._ahead = bytearray()  # received, not yet handed out

    def serves(self, path: str, offset: int) -> bool:
        return not self.eof and path == self.path and self.pos - len(self._behind) <= offset <= self.pos

    def read(self, offset: int, length: int) -> bytes:
        out = bytearray(self._behind[len(self._behind) - (self.pos - offset) :] if offset < self.pos else b"")
        want = length - len(out)
        while len(self._ahead) < want and not self.eof:
            chunk = self.stream.read(self.timeout)
            if chunk is None:
                raise StreamClosed(f"{self.stream.what}: catch-up read stalled for {self.timeout:g} s")
            if not chunk:
                self.eof = True
            self._ahead += chunk
        take = bytes(self._ahead[:want])
        del self._ahead[:want]
        out += take
        self.pos += len(take)
        self._behind = (self._behind + take)[-KEEP:]
        return bytes(out)

    def close(self) -> None:
        self.stream.close()
