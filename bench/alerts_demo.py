"""Seconds from `kvwatch demo` start to a firing token-usage alert, against the 60 s docs/cli.md promises.

Starts the demo as a subprocess on a free loopback port, polls GET /api/alerts every 0.5 s and
stops the demo (by its pid) when `token_usage_high` is firing or after `--timeout` seconds.
Run: `python bench/alerts_demo.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

TARGET_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def firing(port: int) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/alerts", timeout=2) as response:
            alerts = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return next((a for a in alerts if a["rule"] == "token_usage_high" and a["state"] == "firing"), None)


def one_run(timeout: float) -> float | None:
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        argv = [sys.executable, "-m", "kvwatch.app", "demo", "--no-browser", "--port", str(port), "--workdir", workdir]
        start = time.monotonic()
        process = subprocess.Popen(
            argv, cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            while time.monotonic() - start < timeout:
                if firing(port):
                    return time.monotonic() - start
                time.sleep(0.5)
            return None
        finally:
            process.terminate()
            process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    for run in range(args.runs):
        seconds = one_run(args.timeout)
        if seconds is None:
            print(f"run {run + 1}: no firing token_usage_high within {args.timeout:.0f} s")
        else:
            print(
                f"run {run + 1}: firing after {seconds:.1f} s = {seconds / TARGET_S:.2f} of the {TARGET_S:.0f} s target"
            )


if __name__ == "__main__":
    main()
