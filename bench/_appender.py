"""The fleet benches' appender as a process of its own: the offered load must not depend on the
collector under test. In the collector's process, an appending thread waited for the same interpreter
lock as 514 collector threads, and a slower collector was given fewer lines (up to 27 % fewer in
one pair of runs).

usage: python -m bench._appender STAMPS_FILE DIR...   (stop it with SIGTERM)
Every 0.5 s it appends an SGLang decode line to each DIR/server.log (and every second a 2 KB line to
DIR/out/raw_responses.jsonl), and on exit writes `path end_offset monotonic_time` a line to STAMPS_FILE.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench._collect import sglang_line

OUTPUT_LINE = ('{"text": "' + "y" * 2000 + '"}\n').encode()
TICK_S = 0.5


def append_until_stopped(dirs: list[Path], stamps: list[tuple[str, int, float]]) -> None:
    tick, next_at = 0, time.monotonic()
    while True:
        tick += 1
        for d in dirs:
            with open(d / "server.log", "ab") as handle:
                handle.write(sglang_line(tick))
                handle.flush()
                stamps.append((str(d / "server.log"), handle.tell(), time.monotonic()))
            if tick % 2 == 0:
                with open(d / "out" / "raw_responses.jsonl", "ab") as handle:
                    handle.write(OUTPUT_LINE)
        # a late tick is not made up for: a burst of catching up would offer more than the schedule
        next_at = max(next_at + TICK_S, time.monotonic())
        time.sleep(max(0.0, next_at - time.monotonic()))


@contextmanager
def appending(dirs: list[Path], stamps_file: Path) -> Iterator[list[tuple[str, int, float]]]:
    """Run the appender while the block runs; the list it yields holds its writes after the block."""
    writes: list[tuple[str, int, float]] = []
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "bench._appender", str(stamps_file), *map(str, dirs)],
                            cwd=root, env=env)
    try:
        yield writes
    finally:
        proc.terminate()
        proc.wait(30)
        for line in stamps_file.read_text().splitlines():
            path, end, t = line.rsplit(" ", 2)
            writes.append((path, int(end), float(t)))


def main() -> None:
    stamps_file, dirs = Path(sys.argv[1]), [Path(d) for d in sys.argv[2:]]
    stamps: list[tuple[str, int, float]] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        append_until_stopped(dirs, stamps)
    finally:
        stamps_file.write_text("".join(f"{path} {end} {t}\n" for path, end, t in stamps))


if __name__ == "__main__":
    main()
