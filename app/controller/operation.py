"""One restart operation as data: what it starts (Target), where it is (Operation), what the log says.

The page polls `Operation.public()` for live progress; the log scan decides readiness and failure.
"""

from __future__ import annotations

import re
import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kvwatch.app.controller.sinks import Outcome
from kvwatch.app.flags.schema import FlagValue

READY_LINE = "The server is fired up and ready to roll!"
# Lines after which a starting server will not become ready: fail fast instead of waiting for the timeout.
FATAL = re.compile(
    r"Traceback \(most recent call last\)|CUDA out of memory|OutOfMemoryError|Not enough memory"
    r"|Address already in use|Scheduler hit an exception|Received sigquit|^\w+(Exception|Error): "
)
LOG_TAIL = 40


def new_run_id(at: float) -> str:
    """Sortable and unique: `20261202T162811-a3f9c1`."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(at)) + "-" + secrets.token_hex(3)


@dataclass(frozen=True, slots=True)
class Target:
    """A server start: its run, flags and the exact argv, where it logs and which port it serves."""

    run_id: str
    flags: dict[str, FlagValue]
    argv: list[str]
    env: dict[str, str]
    log: str
    host: str
    port: int

    def record(self, op_id: str, at: float) -> dict[str, Any]:
        """What the helper stores on the host (current.json) next to pid, start time and cmdline."""
        return {"run_id": self.run_id, "op_id": op_id, "argv": self.argv, "env": self.env, "log": self.log,
                "flags": self.flags, "host": self.host, "port": self.port, "started_at": at}


@dataclass
class Operation:
    """A restart under way or finished. Mutated only by the worker thread; read by anyone."""

    op_id: str
    host: str
    who: str
    requested_at: float
    from_flags: dict[str, FlagValue]
    to_flags: dict[str, FlagValue]
    run_id: str
    state: str = "queued"   # queued, stopping, starting, waiting, rolling_back, reconnecting, done
    outcome: Outcome | None = None
    detail: str = ""
    log_path: str = ""
    steps: list[tuple[float, str]] = field(default_factory=list)
    log_tail: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_TAIL))
    offsets: dict[str, int] = field(default_factory=dict)
    ready: set[str] = field(default_factory=set)
    prediction: dict[str, Any] | None = None  # what the new flags were predicted to give (app/diagnosis)

    def step(self, state: str, message: str) -> None:
        self.state = state
        self.steps.append((time.time(), message))

    def scan(self, run_id: str, text: str) -> str | None:
        """Feed new log text; the first fatal line (with the chunk's last line, which names a traceback's
        exception), if any. Marks the run ready on the ready line."""
        fatal = None
        for line in text.splitlines():
            self.log_tail.append(line)
            if READY_LINE in line:
                self.ready.add(run_id)
            elif fatal is None and run_id not in self.ready and FATAL.search(line):
                fatal = line.strip()
        last = self.log_tail[-1].strip() if self.log_tail else ""
        return None if fatal is None else fatal if last == fatal else f"{fatal} ... {last}"

    def public(self) -> dict[str, Any]:
        return {"operation_id": self.op_id, "host": self.host, "who": self.who, "requested_at": self.requested_at,
                "from_flags": self.from_flags, "to_flags": self.to_flags, "run_id": self.run_id,
                "state": self.state, "outcome": self.outcome, "detail": self.detail, "log_path": self.log_path,
                "steps": [{"at": at, "message": message} for at, message in self.steps],
                "log_tail": list(self.log_tail), "prediction": self.prediction}
