"""Shared by the collection benchmarks: a throwaway real sshd (the test fixture's recipe)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.fixtures.sshd import Sshd, start_sshd, stop_process


@contextmanager
def throwaway_sshd() -> Iterator[Sshd]:
    d = Path(tempfile.mkdtemp(prefix="kvwatch-bench-"))
    server = start_sshd(d)
    try:
        yield server
    finally:
        stop_process(server.proc)
        shutil.rmtree(d, ignore_errors=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
