"""A long-running command on this machine read like an SSH exec stream (tail -F, nvidia-smi -l)."""

from __future__ import annotations

import os
import select
import subprocess

from collectors.base import CollectorError

RECV_CHUNK = 1 << 20


class LocalStream:
    def __init__(self, argv: list[str]) -> None:
        self.what = f"local: {argv[0]}"
        try:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
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
        return b""

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()
