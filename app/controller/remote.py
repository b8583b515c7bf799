"""The controller's side of remote_helper.py: one helper op per transport.run, answers as dicts.

The helper's source goes on stdin to `<python> - OP STATE ARG...`; every argument is one argv
element, quoted by the transport. Transport failures (SSH dropped) propagate as CollectorError so the
restart protocol can reconnect and re-inspect; a helper that crashed is a HelperFailed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvwatch.collectors.base import CollectorError, CommandResult, StreamClosed, Transport

HELPER_SOURCE = (Path(__file__).resolve().parent / "remote_helper.py").read_bytes()


class HelperFailed(CollectorError):
    """The helper ran and failed (Python missing on the host, a full disk): retrying will not help."""


class RemoteHost:
    """Helper ops against one host's kvwatch state directory, over a connection of its own.

    `connect` makes a connected Transport; a failed call drops it, and the next call connects anew.
    """

    def __init__(self, connect: Callable[[], Transport], python: str, state_dir: str, name: str) -> None:
        self.name = name
        self.connect = connect
        self.python = python
        self.state_dir = state_dir
        self._transport: Transport | None = None
        self._lock = threading.Lock()

    def transport(self) -> Transport:
        with self._lock:
            if self._transport is None:
                self._transport = self.connect()
            return self._transport

    def drop(self) -> None:
        with self._lock:
            transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()

    def run(self, argv: list[str], timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        transport = self.transport()
        try:
            return transport.run(argv, timeout=timeout, stdin=stdin)
        except CollectorError:
            self.drop()
            raise

    def call(self, op: str, *args: str, timeout: float = 30.0) -> dict[str, Any]:
        argv = [self.python, "-", op, self.state_dir, *args]
        result = self.run(argv, timeout=timeout, stdin=HELPER_SOURCE)
        if result.exit_status == -1:  # paramiko: the channel closed without an exit status
            self.drop()
            raise StreamClosed(f"{self.name}: helper {op}: the connection closed before it answered")
        lines = result.stdout.decode("utf-8", "replace").strip().splitlines()
        try:
            answer = json.loads(lines[-1]) if result.exit_status == 0 and lines else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            err = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no answer"]
            raise HelperFailed(f"helper {op} failed (exit {result.exit_status}): {err[0]}")
        return answer

    def lease(self, op_id: str, lease_s: float, owner: str = "") -> dict[str, Any]:
        return self.call("lease", op_id, str(lease_s), *([owner] if owner else []))

    def release(self, op_id: str) -> dict[str, Any]:
        return self.call("release", op_id)

    def status(self, host: str, port: int) -> dict[str, Any]:
        """The record, whether its process is ours and alive, and whether host:port answers."""
        return self.call("status", host, str(port))

    def stop(self, timeout: float) -> dict[str, Any]:
        return self.call("stop", str(timeout), timeout=timeout + 60)

    def start(self, record: dict[str, Any]) -> dict[str, Any]:
        return self.call("start", json.dumps(record))

    def check(self, offset: int, path: str) -> dict[str, Any]:
        return self.call("check", str(offset), path)

    def promote(self, run_id: str) -> dict[str, Any]:
        return self.call("promote", run_id)

    def adopt(self, record: dict[str, Any]) -> dict[str, Any]:
        return self.call("adopt", json.dumps(record))
