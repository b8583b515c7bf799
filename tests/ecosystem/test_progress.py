"""The one-line progress display of long offline work: on a terminal only, never in pipes or logs."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from kvwatch.app.progress import Progress
from tests.ecosystem.processes import DECODE
from tests.ecosystem.repo import REPO


def read_until_newline(fd: int, timeout: float = 10.0) -> str:
    """What the terminal shows, up to the first newline: a pty hands it over in pieces."""
    shown = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in shown and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            shown += os.read(fd, 4096)
    return shown.decode()


def test_progress_draws_on_a_terminal_only() -> None:
    plain = io.StringIO()
    with Progress("parse big.log", total=2048, unit="B", stream=plain) as progress:
        progress.advance(1024)
    assert plain.getvalue() == ""
    primary, secondary = os.openpty()
    try:
        with os.fdopen(secondary, "w", closefd=False) as tty, Progress("parse big.log", total=2048, unit="B",
                                                                        stream=tty) as progress:
            progress.advance(1024)
            progress.advance(1024)
        drawn = read_until_newline(primary)
    finally:
        os.close(primary)
        os.close(secondary)
    assert drawn.startswith("\rparse big.log: [") and drawn.endswith("\n")
    assert "100% 2.0 KB/2.0 KB" in drawn


def test_parse_of_a_large_file_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    line = DECODE.format(ts="2026-02-24 12:00:00", running=57, token=153179, usage=0.97, tps=1510.0, queue=12)
    log.write_text(line * 60_000)  # ~9 MB: several of parse's 4 MiB blocks
    primary, secondary = os.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "kvwatch.app", "parse", "-o", str(tmp_path / "out.jsonl"),
                               str(log)],
                              stdout=subprocess.DEVNULL, stderr=secondary, cwd=REPO, timeout=300, check=False)
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal's other end closed: everything is read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
    assert done.returncode == 0
    text = shown.decode()
    assert "\rparse: [" in text and f"/{log.stat().st_size / 2**20:.1f} MB" in text
    assert f"kvwatch parse: {log} (sglang, 60000 lines)" in text  # the summary on a clean line
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 60_000


def test_parse_into_a_pipe_shows_no_progress(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(DECODE.format(ts="2026-02-24 12:00:00", running=1, token=1, usage=0.5, tps=1.0, queue=0) * 1000)
    done = subprocess.run([sys.executable, "-m", "kvwatch.app", "parse", str(log)], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)
    assert done.returncode == 0 and "\r" not in done.stderr and len(done.stdout.splitlines()) == 1000
