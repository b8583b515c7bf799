"""A local host fed by a writer that numbers its SGLang decode lines: the vertical slice in one process."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.runner import build_services
from kvwatch.app.services import Services

DECODE = (
    "[2026-02-24 12:{minute:02d}:{second:02d} TP0] Decode batch, #running-req: {running}, #token: 153179, "
    "token usage: {usage:.2f}, cuda graph: True, gen throughput (token/s): {tps:.2f}, #queue-req: 7\n"
)


def decode_line(n: int) -> str:
    """Line n (1-based) carries n in its running-req, so stored samples can be traced to lines."""
    return DECODE.format(minute=n // 60 % 60, second=n % 60, running=n, usage=0.5 + (n % 40) / 100, tps=900 + n)


def append_lines(path: Path, first: int, count: int) -> None:
    with path.open("a") as handle:
        handle.writelines(decode_line(n) for n in range(first, first + count))


def local_config(tmp: Path) -> Config:
    host = HostConfig(name="local", ssh="local", server_log=str(tmp / "server.log"),
                      outputs=(str(tmp / "prepared" / "*" / "raw_responses.jsonl"),))
    return Config(server=ServerConfig(data_dir=str(tmp), database="kvwatch.db"), hosts=(host,))


def start_services(tmp: Path, interval: float = 0.05) -> Services:
    services = build_services(local_config(tmp))
    for collector in services.collectors.values():
        collector.interval = interval
    return services


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within timeout")
        time.sleep(0.02)
