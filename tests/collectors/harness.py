"""Numbered writers and a consumer that stores lines exactly as the pipeline must (lines + state)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kvwatch.collectors.base import Line
from kvwatch.collectors.lines import TailState
from kvwatch.collectors.tail import Tail


def numbered(first: int, last: int, pad: str = "payload") -> bytes:
    """Lines `first..last` inclusive, each starting with its number: what the test writers write."""
    return b"".join(f"{n:08d} {pad}\n".encode() for n in range(first, last + 1))


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


class Sink:
    """Keeps every line once, keyed like the store: (generation, end offset) must never repeat."""

    def __init__(self) -> None:
        self.lines: list[Line] = []
        self.keys: set[tuple[int, int]] = set()
        self.state: TailState | None = None

    def poll(self, tail: Tail) -> list[Line]:
        lines = tail.poll()
        state = tail.state
        for line in lines:
            key = (line.generation, line.offset)
            assert key not in self.keys, f"stored twice: {line}"
            self.keys.add(key)
        self.lines += lines
        self.state = state
        return lines

    def until(self, tail: Tail, done: Callable[[Sink], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not done(self):
            assert time.monotonic() < deadline, f"timed out with {len(self.lines)} lines"
            if not self.poll(tail) and not tail.behind:
                time.sleep(0.02)

    def seqs(self) -> list[int]:
        return [int(line.text.split(" ", 1)[0]) for line in self.lines]

    def has(self, n: int) -> Callable[[Sink], bool]:
        return lambda sink: len(sink.lines) >= n


def assert_exactly_once(sink: Sink, first: int, last: int) -> None:
    seqs = sink.seqs()
    assert sorted(seqs) == list(range(first, last + 1)), _diff(seqs, first, last)


def _diff(seqs: list[int], first: int, last: int) -> str:
    want = set(range(first, last + 1))
    got = set(seqs)
    dups = len(seqs) - len(got)
    return f"missing {sorted(want - got)[:10]} extra {sorted(got - want)[:10]} duplicates {dups}"
