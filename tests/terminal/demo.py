"""A real `kvwatch demo` subprocess on a free port, and `kvwatch status|wait` run against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fixtures.processes import stop_group
from tests.fixtures.web import free_port

REPO = Path(__file__).resolve().parents[2]
SPEED = 8.0  # simulated seconds per real second: the story reaches its last run (0.88 after the fp8 veto) in ~2 min
START_TIMEOUT_S = 240.0


@dataclass
class Demo:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    world: Path  # its --workdir: the store `compare --workdir` reads

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=30) as answer:
            return json.loads(answer.read())

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


def kvwatch(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m kvwatch.app ARGS` to completion, stdout and stderr captured."""
    return subprocess.run([sys.executable, "-m", "kvwatch.app", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env, check=False)


@contextmanager
def running_demo(workdir: Path, token: str | None = None) -> Iterator[Demo]:
    """`kvwatch demo --no-browser` in its own session, stopped (by its process group) at the end;
    `token`: its control token (KVWATCH_TOKEN), else none."""
    port = free_port()
    log = workdir / "demo.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kvwatch.app", "demo", "--no-browser", "--port", str(port),
             "--workdir", str(workdir / "world"), "--speed", str(SPEED)],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**{k: v for k, v in os.environ.items() if k != "KVWATCH_TOKEN"}, "PYTHONUNBUFFERED": "1",
                 **({"KVWATCH_TOKEN": token} if token else {})},
        )
    demo = Demo(f"http://127.0.0.1:{port}", proc, log, workdir / "world")
    try:
        wait_until(demo, lambda: demo.get("/api/hosts"), "the demo to answer")
        yield demo
    finally:
        stop_group(proc)


def wait_until(demo: Demo, check: Any, what: str, timeout: float = START_TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        assert demo.proc.poll() is None, f"kvwatch demo exited {demo.proc.returncode}:\n{demo.tail()}"
        try:
            found = check()
            if found:
                return found
        except OSError:  # still starting
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}:\n{demo.tail()}")
        time.sleep(0.5)
