"""`python -m kvwatch.simulator.client` against the simulated server: outputs, progress, resume, buffering."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvwatch.parsers import create_parser
from tests.simulator.helpers import KIMI_088, REPO, SimProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SimProcess]:
    sim = SimProcess(tmp_path, [*KIMI_088, "--sim-response-mean", "300"], speed=80.0)
    try:
        sim.wait_ready()
        yield sim
    finally:
        sim.stop()


def client(server: SimProcess, workdir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kvwatch.simulator.client", "--url", server.url, "--workdir", str(workdir), *extra]


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def test_datasets_in_order_with_progress_and_resume(server: SimProcess, tmp_path: Path) -> None:
    argv = client(server, tmp_path, "--datasets", "B1,B2_opencodeinstruct", "--limit", "12", "--flush",
                  "--concurrency", "6")
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    b1 = tmp_path / "prepared" / "B1" / "raw_responses.jsonl"
    b2 = tmp_path / "prepared" / "B2_opencodeinstruct" / "raw_responses.jsonl"
    assert (lines(b1), lines(b2)) == (12, 12)
    parser = create_parser("client")
    progress = [r for i, line in enumerate(done.stdout.splitlines(), 1) for r in parser.feed(i, line)
                if r["kind"] == "progress"]
    assert progress[0]["desc"] == "B1"
    assert progress[-1]["desc"] == "B2_opencodeinstruct"
    assert (progress[-1]["done"], progress[-1]["total"]) == (12, 12)
    assert done.stdout.index("Processing B1 ...") < done.stdout.index("Processing B2_opencodeinstruct ...")

    again = subprocess.run(client(server, tmp_path, "--datasets", "B1", "--limit", "15", "--flush"), cwd=REPO,
                           capture_output=True, text=True, timeout=240)
    assert again.returncode == 0, again.stderr
    assert lines(b1) == 15  # resumed after the 12 already there
    assert "B1:  80%|" in again.stdout  # 12/15 at the start


def test_buffered_stdout_keeps_the_client_log_empty_while_outputs_grow(server: SimProcess, tmp_path: Path) -> None:
    log = tmp_path / "inference_all.log"
    out = tmp_path / "prepared" / "B2_opencodeinstruct" / "raw_responses.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as a plain `python x.py > log`
    with log.open("wb") as sink:
        proc = subprocess.Popen(client(server, tmp_path, "--datasets", "B2_opencodeinstruct"), cwd=REPO,
                                stdout=sink, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 120
        while lines(out) < 5 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert lines(out) >= 5
        assert log.stat().st_size == 0  # Python block-buffers a redirected stdout
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert log.stat().st_size == 0  # killed by SIGTERM: the buffer never reached the file
