"""Wake-ups for a host's poll loop: one `tail -F` stream per host instead of fast polling.

Measured on this machine: a poll round (one batched stat plus a read) costs ~4 ms over SSH, so
polling every file 10 times a second on 64 hosts would be ~2500 remote requests a second; SFTP
polling at 100 ms gave p50 56 ms (reference measurements). A `tail -n 0 -F` exec stream pushes a
change within ~1 ms, so the loop polls when something happened, and on a slow timer otherwise.
The stream carries only a wake-up: data is still read by the exact Tail, at exact offsets, so
nothing `tail -F` does at rotation or truncation can misplace a byte. `tr -dc '\\n'` keeps one
byte per appended line, so a busy JSONL file is not sent twice.

Where tail cannot use inotify (logs on NFS or Lustre, which GNU tail polls by design, or a host
whose user has used up its inotify instances: 128 by default, and editors' file watchers take many),
it polls every `-s` seconds: 1 s by default, so every wake-up came up to a second late. POLL_S keeps
that fallback at a fifth of a second: a stat of the followed files 5 times a second on the host.
"""

from __future__ import annotations

from kvwatch.collectors.base import CollectorError, Stream, Transport

POLL_S = 0.2
_TAIL = f"tail -q -n 0 -F -s {POLL_S} --"
_SCRIPT = (
    f'if command -v stdbuf >/dev/null 2>&1; then {_TAIL} "$@" 2>&1 | stdbuf -o0 tr -dc "\\n"; '
    f'else {_TAIL} "$@" 2>&1; fi'
)


class Watch:
    """`wait(timeout)` returns True as soon as any watched file changed (or the stream broke)."""

    def __init__(self, transport: Transport, paths: list[str]) -> None:
        self.paths = sorted(paths)
        self._stream: Stream | None = None
        if self.paths:
            try:
                # a pty: when we go away, the remote tail is hung up instead of lingering
                self._stream = transport.open_stream(["sh", "-c", _SCRIPT, "sh", *self.paths], pty=True)
            except CollectorError:
                self._stream = None  # no shell or no tail: the loop falls back to its timer

    @property
    def active(self) -> bool:
        return self._stream is not None

    def wait(self, timeout: float) -> bool:
        if self._stream is None:
            return False
        try:
            got = self._stream.read(timeout)
        except (CollectorError, OSError):
            got = b""
        if got is None:
            return False
        if got == b"":
            self.close()  # ended: report once so the caller polls (and sees any connection error)
            return True
        while self._stream is not None and self._stream.read(0) not in (None, b""):
            pass  # coalesce a burst into one wake-up
        return True

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
