"""Start and talk to `python -m kvwatch.simulator.server` subprocesses in tests."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kvwatch.parsers import create_parser
from kvwatch.simulator.demo import free_port

REPO = Path(__file__).resolve().parents[2]
KIMI_088 = ["--model-path", "/models/Kimi-K2.5", "--tp", "8", "--mem-fraction-static", "0.88",
            "--enable-hierarchical-cache", "--hicache-size", "48"]


class SimProcess:
    def __init__(self, tmp: Path, args: list[str], speed: float = 60.0) -> None:
        self.port = free_port()
        self.log = tmp / "sglang.log"
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "kvwatch.simulator.server", *args, "--port", str(self.port),
                "--sim-speed", str(speed), "--sim-log-file", str(self.log)]
        self.proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        STARTED.append(self)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"simulator exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                # before 0.5 /health answers 200 while still loading, as SGLang's did: the log says when
                if get(self.url + "/health")[0] == 200 and "ready to roll" in self.log.read_text():
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("simulator did not become healthy")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def records(self) -> list[dict[str, Any]]:
        return parse_log(self.log)


STARTED: list[SimProcess] = []  # stopped after each test by tests/simulator/conftest.py, passed or not


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def post(url: str, body: dict[str, Any], output_tokens: int | None = None) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"}
    if output_tokens is not None:
        headers["X-Sim-Output-Tokens"] = str(output_tokens)
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=60) as answer:
        return dict(json.loads(answer.read()))


def parse_log(path: Path) -> list[dict[str, Any]]:
    parser = create_parser("sglang")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        records += parser.feed(number, line)
    return records + parser.flush()
