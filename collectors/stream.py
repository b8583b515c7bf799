"""A long-running command on this machine read like an SSH exec stream (tail -F, nvidia-smi -l)."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import subprocess

from kvwatch.collectors.base import CollectorError

RECV_CHUNK = 1 << 20


# The command runs in a process group of its own beside a watchdog that reads the stdin pipe kvwatch
# holds: when kvwatch ends in any way (kill -9 too), the pipe closes and the watchdog kills the group.
# Without it a `tail -F` on a file that never changes again ran on for as long as the machine did.
_WATCHED = 'exec 3<&0; (cat <&3; kill -KILL 0) >/dev/null 2>&1 & exec "$@" 3<&- </dev/null'


class LocalStream:
    def __init__(self, argv: list[str]) -> None:
        self.what = f"local: {argv[0]}"
        if shutil.which(argv[0]) is None:
            raise CollectorError(f"{argv[0]}: {os.strerror(errno.ENOENT)}")
        try:
            # A group of its own: `sh -c 'tail -F | tr'` leaves tail and tr behind when only sh is
            # killed, and a tail on a file that never changes again never meets a closed pipe.
            self._proc = subprocess.Popen(
                ["sh", "-c", _WATCHED, "sh", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True,
            )
        except OSError as exc:
            raise CollectorError(f"{argv[0]}: {exc.strerror}") from exc
        assert self._proc.stdout is not None
        self._fd = self._proc.stdout.fileno()

    def read(self, timeout: float) -> bytes | None:
        """Next stdout bytes; None when nothing arrived within `timeout`; b"" at end of stream."""
        ready, _, _ = select.select([self._fd], [], [], timeout)
        if not ready:
            return None
        return os.read(self._fd, RECV_CHUNK)

    def stderr(self) -> bytes:
        """What the child said on stderr, read without blocking (asked once its stdout has ended)."""
        assert self._proc.stderr is not None
        fd, said = self._proc.stderr.fileno(), b""
        while len(said) < RECV_CHUNK and select.select([fd], [], [], 0.2)[0]:
            chunk = os.read(fd, RECV_CHUNK)
            if not chunk:
                break
            said += chunk
        return said

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):  # the whole group has ended already
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()
