"""Reading an old generation out: the file a rename rotation moved away, a copytruncate's copy, and
the generations rotated in between ours and the current file.

An old generation is read by its path but known by its inode: when a numbered logrotate renames it
again (`.1` to `.2`) between two reads, it is found again in the same directory by inode. It is
done when read to its end and, if it may still be written (a renamed file whose writer has not
reopened yet), quiet for `rotate_wait` seconds. Whatever vanishes before it is read out is counted
in `TailStats.lost_generations`; nothing is ever read twice.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass

from kvwatch.collectors.base import FileStat, Line, SourceMissing, SourceUnreadable, Transport
from kvwatch.collectors.lines import LineSplitter
from kvwatch.collectors.tail_copies import sibling_files, stat_all
from kvwatch.collectors.tail_rotations import between, compressed


@dataclass
class TailStats:
    bytes_read: int = 0
    lines: int = 0
    truncated_lines: int = 0  # longer than max_line: text cut, offset exact
    replaced_lines: int = 0  # invalid UTF-8 replaced by U+FFFD
    rotations: int = 0
    truncations: int = 0
    replacements: int = 0
    lost_generations: int = 0  # an old generation vanished before it was drained
    copies_drained: int = 0  # truncations whose unread rest was drained from a copy (see tail_copies)


@dataclass
class Drain:
    split: LineSplitter
    inode: int
    path: str | None  # None: not known (resumed, or renamed again); found by inode
    last_growth: float
    grows: bool = True  # a renamed file may still be written; a copytruncate copy is complete


@dataclass(frozen=True)
class Between:
    """A generation rotated after ours and before the current file, read whole."""

    path: str
    inode: int
    generation: int


class DrainReader:
    """Reads old generations next to `path` over `transport`, counting into `stats`."""

    def __init__(self, transport: Transport, path: str, stats: TailStats, *, read_chunk: int,
                 rotate_wait: float) -> None:
        self.transport = transport
        self.path = path
        self.stats = stats
        self.read_chunk = read_chunk
        self.rotate_wait = rotate_wait

    def find(self, inode: int) -> str | None:
        return self.transport.find_inode(posixpath.dirname(self.path) or ".", inode)

    def stat(self, path: str) -> FileStat | None:
        try:
            return self.transport.stat(path)
        except SourceMissing:
            return None

    def run(self, d: Drain, final: bool) -> tuple[list[Line], bool]:
        """Read `d` up to its end; (its lines, whether it is finished: flushed and to be dropped)."""
        lines: list[Line] = []
        st = self._drain_stat(d)
        while st is not None and d.path is not None and st.size > d.split.read_pos:
            n = min(st.size - d.split.read_pos, self.read_chunk)
            try:
                data = self.transport.read(d.path, d.split.read_pos, n)
            except SourceMissing:  # renamed or removed since the stat: found by inode next poll, or lost
                d.path = None
                if not final:
                    return lines, False
                st = None
                break
            if not data:
                break
            if not self._still_there(d):  # renamed again (numbered logrotate) between the stat and the read
                d.path = None  # found again by inode
                st = self._drain_stat(d)
                continue
            lines += d.split.feed(data)
            self.stats.bytes_read += len(data)
            d.last_growth = time.monotonic()
        if st is None:  # gone (deleted, moved away, compressed) before we read it all
            self.stats.lost_generations += 1
        if st is None or final or not d.grows or time.monotonic() - d.last_growth >= self.rotate_wait:
            return lines + d.split.flush(), True
        return lines, False

    def rotated_between(self, ours: str, skip: tuple[int, ...], generation: int) -> list[Between]:
        """The readable generations rotated after `ours`, numbered from `generation` + 1: named as
        rotated later (collectors/tail_rotations.py) *and* written after it. The time check keeps a
        counter naming that grows (`mv server.log server.log.$n`) from reading older files again;
        a tie (one-second mtimes over SSH) is not read. Compressed ones count as lost."""
        ours_st = self.stat(ours)
        if ours_st is None or ours_st.mtime <= 0:
            return []
        named = between(self.path, ours, sibling_files(self.transport, self.path))
        found: list[Between] = []
        for path, st in stat_all(self.transport, named).items():  # one round trip, in `named` order
            if st is None or st.inode in skip or st.mtime <= ours_st.mtime:
                continue
            if compressed(path):  # cannot be read at an offset
                self.stats.lost_generations += 1
                continue
            found.append(Between(path, st.inode, generation + 1 + len(found)))
        self.stats.rotations += len(found)
        return found

    def read_whole(self, gen: Between, split: LineSplitter) -> list[Line]:
        """An in-between generation whole; one that cannot be read is skipped (counted lost) rather
        than holding up the current file, as HostFollower would hold the whole source."""
        try:
            return self.run(Drain(split, gen.inode, gen.path, time.monotonic(), grows=False), final=True)[0]
        except SourceUnreadable:
            self.stats.lost_generations += 1
            return []

    def _still_there(self, d: Drain) -> bool:
        """Is the drained file still at `d.path` after a read by that path? A drain has no bytes of
        its own to compare a read with, so the path is checked again."""
        st = self.stat(d.path) if d.path else None
        return st is not None and st.inode == d.inode

    def _drain_stat(self, d: Drain) -> FileStat | None:
        """The drained file's stat, found again by inode if it was renamed (None: it is gone)."""
        st = self.stat(d.path) if d.path else None
        if st is None or st.inode != d.inode:
            d.path = self.find(d.inode)
            st = self.stat(d.path) if d.path else None
        return st if st is not None and st.inode == d.inode else None
