"""A rotation that lands between the tail's stat of a path and its read of the same path: the read
then returns another file's bytes. Nothing may be stored twice or lost for it. Found by the soak
(tests/hardening/test_soak.py) under load: over SSH the gap between the stat and the read is a few
round trips, and a rename in it made the tail read the old file again from 0 as a new generation."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kvwatch.collectors.base import Transport
from kvwatch.collectors.tail import Tail
from tests.collectors.harness import Sink, append, numbered


class RotateBeforeRead:
    """The transport, except that the first read of `path` once armed runs `rotate` just before it."""

    def __init__(self, transport: Transport, path: Path) -> None:
        self._transport = transport
        self._path = str(path)
        self._rotate: Callable[[], None] | None = None
        self.fired = 0

    def arm(self, rotate: Callable[[], None]) -> None:
        self._rotate = rotate

    def read(self, path: str, offset: int, length: int) -> bytes:
        if self._rotate is not None and path == self._path:
            rotate, self._rotate = self._rotate, None
            rotate()
            self.fired += 1
        return self._transport.read(path, offset, length)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def drained(sink: Sink, count: int) -> Callable[[Sink], bool]:
    return lambda s: len(s.lines) >= count and s.state is not None and s.state.draining is None


# The new file shorter than our offset (the read by the path comes back short), or already longer.
@pytest.mark.parametrize("new_lines", [10, 400], ids=["shorter", "longer"])
def test_rename_between_stat_and_read(transport: Transport, tmp_path: Path, new_lines: int) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 100))
    racy = RotateBeforeRead(transport, log)
    tail, sink = Tail(racy, str(log), "s", rotate_wait=0.2), Sink()  # type: ignore[arg-type]
    sink.poll(tail)
    append(log, numbered(101, 150))

    def rotate() -> None:
        os.rename(log, tmp_path / "server.log.1")
        append(log, numbered(1001, 1000 + new_lines))

    racy.arm(rotate)
    sink.until(tail, drained(sink, 150 + new_lines))
    assert racy.fired == 1
    assert sorted(sink.seqs()) == [*range(1, 151), *range(1001, 1001 + new_lines)]
    assert tail.stats.rotations == 1
    assert tail.stats.truncations == 0


def test_rename_between_stat_and_read_after_a_restart(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, numbered(1, 100))
    sink = Sink()
    sink.poll(Tail(transport, str(log), "s"))
    append(log, numbered(101, 150))
    racy = RotateBeforeRead(transport, log)

    def rotate() -> None:  # the resumed tail's first look at the file it committed
        os.rename(log, tmp_path / "server.log.1")
        append(log, numbered(1001, 1400))

    racy.arm(rotate)
    resumed = Tail(racy, str(log), "s", sink.state, rotate_wait=0.2)  # type: ignore[arg-type]
    sink.until(resumed, drained(sink, 550))
    assert sorted(sink.seqs()) == [*range(1, 151), *range(1001, 1401)]


def test_drained_file_renamed_again_between_stat_and_read(transport: Transport, tmp_path: Path) -> None:
    """Numbered logrotate: `server.log.1` becomes `.2` and the current file becomes `.1` while the
    previous generation is still being drained from `.1`."""
    log, first, second = tmp_path / "server.log", tmp_path / "server.log.1", tmp_path / "server.log.2"
    writer = open(log, "ab", buffering=0)  # noqa: SIM115 - the old process writes on after the rename
    writer.write(numbered(1, 100))
    racy = RotateBeforeRead(transport, first)
    tail, sink = Tail(racy, str(log), "s", rotate_wait=5.0), Sink()  # type: ignore[arg-type]
    sink.poll(tail)
    os.rename(log, first)
    append(log, numbered(1001, 1300))  # longer than the drained file: a read of it at the drain's offset returns lines
    sink.poll(tail)  # the old generation is drained from server.log.1, the new one read from 0
    writer.write(numbered(101, 150))
    writer.close()

    def rotate() -> None:
        os.rename(first, second)
        os.rename(log, first)
        append(log, numbered(2001, 2020))

    racy.arm(rotate)
    sink.until(tail, lambda s: len(s.lines) >= 470, timeout=15.0)
    assert racy.fired == 1
    assert sorted(sink.seqs()) == [*range(1, 151), *range(1001, 1301), *range(2001, 2021)]
