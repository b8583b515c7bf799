"""Exec channels with a deadline on every wait.

paramiko's `recv_exit_status()` waits without a timeout and can deadlock when output exceeds the
window before it is read; everything here drains stdout and stderr first and waits on a deadline.
"""

from __future__ import annotations

import shlex
import time

import paramiko

from kvwatch.collectors.base import CommandResult, StreamClosed
from kvwatch.collectors.ssh.framing import Unframer

RECV_CHUNK = 1 << 20
# bulk streams (catch-up): bigger SSH packets cost less Python per byte, and a bigger window lets
# the host run ahead while the tail splits lines (bounded: 4 MiB buffered per connection at most)
BULK_WINDOW = 4 << 20
BULK_PACKET = 256 << 10
_TICK = 0.05


def quote_argv(argv: list[str]) -> str:
    """The exec string for a remote POSIX login shell: every element quoted, nothing interpreted."""
    if not argv:
        raise ValueError("empty argv")
    return " ".join(shlex.quote(arg) for arg in argv)


def open_exec(transport: paramiko.Transport, command: str, timeout: float, pty: bool = False,
              bulk: bool = False) -> paramiko.Channel:
    if bulk:
        chan = transport.open_session(window_size=BULK_WINDOW, max_packet_size=BULK_PACKET, timeout=timeout)
    else:
        chan = transport.open_session(timeout=timeout)
    chan.settimeout(timeout)
    if pty:
        chan.get_pty(term="dumb", width=200, height=24)
    chan.exec_command(command)
    return chan


def run_channel(chan: paramiko.Channel, stdin: bytes, timeout: float, what: str) -> CommandResult:
    """Feed stdin, collect stdout/stderr to EOF and the exit status, all before `timeout`."""
    deadline = time.monotonic() + timeout
    try:
        if stdin:
            chan.sendall(stdin)
        chan.shutdown_write()
        out = bytearray()
        err = bytearray()
        while True:
            _check(deadline, what)
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(RECV_CHUNK)
            chan.settimeout(_TICK)
            try:
                chunk = chan.recv(RECV_CHUNK)
            except TimeoutError:
                continue
            if not chunk:
                break
            out += chunk
        while not chan.exit_status_ready():
            _check(deadline, what)
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(RECV_CHUNK)
            chan.status_event.wait(_TICK)
        while chan.recv_stderr_ready():
            err += chan.recv_stderr(RECV_CHUNK)
        return CommandResult(chan.recv_exit_status(), bytes(out), bytes(err))
    finally:
        chan.close()


def _check(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise StreamClosed(f"{what}: no answer before the deadline")


class ExecStream:
    """A long-running remote command whose stdout is read incrementally (tail -F, nvidia-smi -l).
    With an `unframer`, what the login shell printed before the command's marker line is dropped."""

    def __init__(self, chan: paramiko.Channel, what: str, unframer: Unframer | None = None) -> None:
        self._chan = chan
        self.what = what
        self._unframer = unframer

    def read(self, timeout: float) -> bytes | None:
        """Next stdout bytes; None when nothing arrived within `timeout`; b"" at end of stream."""
        deadline = time.monotonic() + timeout
        while True:
            data = self._recv(max(deadline - time.monotonic(), 0.0))
            if not data or self._unframer is None or self._unframer.done:
                return data
            own = self._unframer.feed(data)
            if own:
                return own
            if time.monotonic() >= deadline:  # only the banner or the marker so far
                return None

    def _recv(self, timeout: float) -> bytes | None:
        self._chan.settimeout(timeout)
        try:
            return bytes(self._chan.recv(RECV_CHUNK))
        except TimeoutError:
            if self._chan.closed or not self._chan.get_transport().is_active():
                return b""
            return None

    def stderr(self) -> bytes:
        err = bytearray()
        while self._chan.recv_stderr_ready():
            err += self._chan.recv_stderr(RECV_CHUNK)
        return bytes(err)

    def close(self) -> None:
        # Without a pty the remote command only notices when its next write hits SIGPIPE;
        # closing the channel makes sshd close its pipes, which GNU tail notices within ~1 s.
        self._chan.close()
