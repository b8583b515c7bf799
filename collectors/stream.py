"""A long-running command on this machine read like an SSH exec stream (tail -F, nvidia-smi -l)."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess

from kvwatch.collectors.base import CollectorError

RECV_CHUNK = 1 << 20


class LocalStream:
    def __init__(self, argv: list[str]) -> None:
        self.what = f"local: {argv[0]}"
        try:
            # A group of its own: `sh -c 'tail -F | tr'` leaves tail and tr behind when only sh is
            # killed, and a tail on a file that never changes again never meets a closed pipe.
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,
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
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()
