"""Commands framed by a marker line, so what a login shell prints first never reads as their output.

A host whose shell prints a banner on every session (`echo` in .bashrc, a distribution's greeting,
a `module load` message) puts that text in front of each exec channel's stdout: it broke the one-exec
clock probe, shifted the stat answers and would land in a catch-up read of a log as lines of that
log. Every exec command therefore prints a marker line first (`printf` a random token, then `exec`
the command) and everything up to that line is dropped. The token is drawn per connection, so no
banner can imitate it.
"""

from __future__ import annotations

import secrets

MAX_BANNER = 1 << 20  # past this, no marker is coming: the bytes are passed on as they are


def new_marker() -> bytes:
    return f"kvwatch-frame-{secrets.token_hex(8)}".encode()


def framed(command: str, marker: bytes) -> str:
    """`command` (already shell-quoted) run after the marker line, as the same process (`exec`)."""
    return f"printf '%s\\n' {marker.decode()}; exec {command}"


def unframe(stdout: bytes, marker: bytes) -> tuple[bytes, bytes]:
    """(banner, output) of a finished command's stdout; all output when no marker is in it."""
    index = stdout.find(marker)
    if index == -1:
        return b"", stdout
    end = _line_end(stdout, index + len(marker))
    return stdout[:index], stdout[end:]


def _line_end(data: bytes, end: int) -> int:
    if data[end : end + 2] == b"\r\n":  # a pty's line end
        return end + 2
    if data[end : end + 1] == b"\n":
        return end + 1
    return end


class Unframer:
    """The same for a stream: bytes are held back until the marker line has passed."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.banner = b""
        self.done = False
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """The stream's own bytes in `data` (b"" while the marker is still to come)."""
        if self.done:
            return data
        self._held += data
        index = self._held.find(self.marker)
        if index == -1:
            if len(self._held) > MAX_BANNER:
                return self._give_up()
            return b""
        end = index + len(self.marker)
        if end + 2 > len(self._held) and not self._held[end:].startswith(b"\n"):
            return b""  # the marker's line end may still be on its way
        self.banner, rest = self._held[:index], self._held[_line_end(self._held, end) :]
        self.done, self._held = True, b""
        return rest

    def _give_up(self) -> bytes:
        held, self._held, self.done = self._held, b"", True
        return held
