"""Real `kvwatch` processes for the ecosystem tests, their logs kept for the failure message."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

DECODE = (
    "[{ts} TP0] Decode batch, #running-req: {running}, #token: {token}, token usage: {usage:.2f}, "
    "cuda graph: True, gen throughput (token/s): {tps:.2f}, #queue-req: {queue}\n"
)


def append_decode_lines(path: Path, values: range) -> None:
    """One SGLang decode line per value, stamped now (UTC, as kvwatch reads zoneless log times)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    with path.open("a") as handle:
        handle.writelines(
            DECODE.format(ts=stamp, running=n, token=100 * n, usage=0.5 + n % 40 / 100, tps=900.0 + n, queue=n % 7)
            for n in values
        )


class Kvwatch:
    """`python -m kvwatch.app ARGS` with stdout/stderr in files under `logs`."""

    def __init__(self, name: str, args: list[str], logs: Path) -> None:
        self.name = name
        self.err_path = logs / f"{name}.err"
        with (logs / f"{name}.out").open("w") as out, self.err_path.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kvwatch.app", *args], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                cwd=Path(__file__).resolve().parents[2], env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()

    def signal(self, signum: int, timeout: float = 20.0) -> int:
        self.proc.send_signal(signum)
        return self.proc.wait(timeout)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@contextmanager
def kvwatch_processes(logs: Path) -> Iterator[Callable[[str, list[str]], Kvwatch]]:
    """Start processes with the yielded function; all are stopped (by pid) when the block ends."""
    started: list[Kvwatch] = []

    def start(name: str, args: list[str]) -> Kvwatch:
        started.append(Kvwatch(name, args, logs))
        return started[-1]

    try:
        yield start
    finally:
        for process in started:
            process.stop()


def wait_for(predicate: Callable[[], object], timeout: float, what: str, logs: Sequence[Kvwatch] = ()) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except Exception:  # a server still starting refuses connections
            pass
        if time.monotonic() > deadline:
            details = "\n".join(f"--- {p.name} (rc={p.proc.poll()}):\n{p.stderr[-3000:]}" for p in logs)
            raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{details}")
        time.sleep(0.2)
