"""The copy finder's pure parts (names, the identity check and its reads) and the one-copy rule."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from kvwatch.collectors.lines import HEAD_BYTES, MARKER_BYTES, TailState, digest
from kvwatch.collectors.local import LocalTransport
from kvwatch.collectors.tail_copies import ONE_READ_MAX, candidates, find_copy, holds
from tests.collectors.harness import numbered


def state_of(data: bytes, offset: int) -> TailState:
    head = data[: min(HEAD_BYTES, offset)]
    marker = data[max(0, offset - MARKER_BYTES) : offset]
    return TailState(1, 1, offset, 0, digest(head), len(head), digest(marker))


def test_candidate_names() -> None:
    listing = ["/l/server.log", "/l/server.log.1", "/l/server.log.2.gz", "/l/server.log-20261203",
               "/l/server.log-20261202.xz", "/l/server.logx", "/l/server.log.", "/l/other.log.1",
               "/l/server.log.1.bz2", "/l/server.log.3.zst", "/l/server.log.old"]
    assert candidates("/l/server.log", listing) == ["/l/server.log.1", "/l/server.log-20261203", "/l/server.log.old"]
    assert candidates("~/logs/a.jsonl", ["/home/u/logs/a.jsonl.1"]) == ["/home/u/logs/a.jsonl.1"]


def test_holds_reads_little_and_checks_both_ends() -> None:
    data = numbered(1, 400)
    reads: list[tuple[int, int]] = []

    def read(offset: int, length: int, source: bytes = data) -> bytes:
        reads.append((offset, length))
        return source[offset : offset + length]

    big = state_of(data, len(numbered(1, 300)))
    assert holds(big, read)
    assert reads == [(0, HEAD_BYTES), (big.offset - MARKER_BYTES, MARKER_BYTES)]
    reads.clear()
    other_head = numbered(7, 400)
    assert not holds(big, lambda o, n: read(o, n, other_head))
    assert len(reads) == 1  # the head differs: the marker is not read
    spliced = numbered(1, 100) + numbered(8001, 8500)  # same head, other bytes before the offset
    assert not holds(big, lambda o, n: spliced[o : o + n])
    small = state_of(data, 3 * 17)
    reads.clear()
    assert holds(small, read) and small.offset <= ONE_READ_MAX
    assert reads == [(0, small.offset)]
    assert not holds(small, lambda o, n: b"X" + data[1:][o : o + n])


def test_only_a_single_matching_copy_counts(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(numbered(1, 300))
    state = state_of(log.read_bytes(), len(numbered(1, 200)))
    live = log.stat().st_ino
    local = LocalTransport()
    assert find_copy(local, str(log), state, live) is None  # only the live file itself
    shutil.copy(log, tmp_path / "server.log.1")
    found = find_copy(local, str(log), state, live)
    assert found is not None and found.path == str(tmp_path / "server.log.1") and found.size == log.stat().st_size
    os.link(tmp_path / "server.log.1", tmp_path / "server.log.hardlink")  # the same file twice: one copy
    assert find_copy(local, str(log), state, live) == found
    assert find_copy(local, str(log), state.with_(offset=0), live) is None  # nothing committed: no guess
    shutil.copy(log, tmp_path / "server.log-bak")  # a second file that fits as well: ambiguous
    assert find_copy(local, str(log), state, live) is None
