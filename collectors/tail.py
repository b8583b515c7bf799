"""An exact tail of one path over any Transport.

`poll()` returns the complete lines that appeared since the last call; `tail.state` is then the
TailState to commit *with* them (one store transaction). Resuming from a committed state re-reads nothing twice and
skips nothing: the state names the file (inode, head fingerprint, marker before the offset), so a
file rotated, truncated, regrown or replaced while we were away is recognised.

What each change of the file behind the path becomes:
- rename rotation (the old inode now lives under another name in the same directory): the old
  generation is drained to its end, and kept open until it stops growing for `rotate_wait` s, while
  the new file is read from 0 as the next generation;
- copytruncate / truncate (size below what we read) and truncate-and-regrow (the bytes before our
  offset changed): new generation from 0. If exactly one copy of the old generation lies next to the
  path (copytruncate's `server.log.1`, later `.2`, dateext `server.log-20261203`: longer than our
  offset, same head fingerprint and same bytes before the offset; collectors/tail_copies.py), the
  rest of the old generation is first drained from that copy, keeping its generation and numbers;
- atomic replace (another inode, old one gone): if the new file starts with exactly the bytes we
  already read, we continue at our offset; otherwise new generation from 0;
- path missing: nothing is lost, the tail waits; when the path reappears it is a new generation.

Limits: a file deleted, recreated (reusing the inode) and regrown with identical leading bytes
between two polls cannot be told apart from the old one; a file renamed out of its directory
cannot be drained (counted in `stats.lost_generations`); of two or more rename rotations while we
were away, the generations between ours and the current file are read only when their names and
modification times place them there (collectors/tail_rotations.py). Copytruncate still loses
what the writer appended between the copy and the truncation (it is nowhere any more), and
everything after our offset when no copy qualifies (compressed or moved away at once, or two copies
that both match).
"""

from __future__ import annotations

import time

from kvwatch.collectors.base import CollectorError, FileStat, Line, SourceMissing, Transport
from kvwatch.collectors.lines import (
    HEAD_BYTES,
    MARKER_BYTES,
    MAX_LINE_BYTES,
    DrainState,
    LineSplitter,
    TailState,
    digest,
)
from kvwatch.collectors.tail_copies import find_copy
from kvwatch.collectors.tail_drain import Between, Drain, DrainReader, TailStats

READ_CHUNK = 4 << 20  # per poll and file: one busy file cannot starve the others; 8 MiB made a
# catch-up's peak 30 MB higher (bench/attach_history.py)


class Unknown:
    """Marks "no stat given": poll() stats the path itself."""


UNKNOWN = Unknown()


class Tail:
    def __init__(self, transport: Transport, path: str, source: str, state: TailState | None = None,
                 *, rotate_wait: float = 5.0, read_chunk: int = READ_CHUNK,
                 max_line: int = MAX_LINE_BYTES) -> None:
        self.transport = transport
        self.path = path
        self.source = source
        self.rotate_wait = rotate_wait
        self.read_chunk = read_chunk
        self.max_line = max_line
        self.stats = TailStats()
        self.behind = False  # more bytes were available than one poll reads
        self.missing = False  # the path was not there at the last poll (deleted, moved, not yet created)
        self.size_seen = 0  # the current file's size at the last read (catch-up progress)
        self.state: TailState | None = state if state is not None and state.generation > 0 else None
        self._restore(self.state)

    # -- public -----------------------------------------------------------------------------
    def poll(self, stat: FileStat | Unknown | None = UNKNOWN) -> list[Line]:
        """Complete new lines; afterwards `self.state` is the state to commit together with them.

        On a CollectorError nothing is half-done: the tail rewinds to the last returned state
        (in-memory fragments are dropped and re-read), so the caller may simply poll again.
        If the caller fails to commit, it calls `rewind(committed_state)`.
        `stat`: the path's stat if the caller already has it (`Transport.stat_many`; None = missing).
        """
        try:
            lines = self._poll(stat)
        except CollectorError:
            self._restore(self.state)
            raise
        self.state = self._snapshot()
        self.stats.lines += len(lines)
        return lines

    def rewind(self, state: TailState | None) -> None:
        """Go back to a committed state (the store refused the last batch)."""
        self.state = state if state is not None and state.generation > 0 else None
        self._restore(self.state)

    def rebind(self, transport: Transport) -> None:
        """Continue on a new connection from the last returned state."""
        self.transport = transport
        self._restore(self.state)

    # -- state ------------------------------------------------------------------------------
    def _restore(self, state: TailState | None) -> None:
        self._cur: LineSplitter | None = None
        self._inode = 0
        self._head = b""
        self._tail = b""  # bytes just before _cur.read_pos (checked on every read)
        self._marker = b""  # bytes just before _cur.offset (persisted as a digest)
        self._verify = state is not None
        self._vanished = False
        self._drain: Drain | None = None
        # Generations between ours and the current file (two or more rotations): read out in the
        # poll that found them, so a failed poll re-finds them from the restored state.
        self._between: list[Between] = []  # oldest first
        if state is None:
            return
        self._cur = self._splitter(state.generation, state.offset, state.line_no)
        self._inode = state.inode
        if state.draining is not None:
            d = state.draining
            self._drain = Drain(self._splitter(d.generation, d.offset, d.line_no), d.inode, None, 0.0)

    def _splitter(self, generation: int, offset: int, line_no: int) -> LineSplitter:
        return LineSplitter(self.source, generation, offset, line_no, self.max_line)

    def _snapshot(self) -> TailState | None:
        cur = self._cur
        if cur is None:
            return None
        drain = None
        if self._drain is not None:
            s = self._drain.split
            drain = DrainState(s.generation, self._drain.inode, s.offset, s.line_no)
        if self._verify and self.state is not None:  # current file not re-checked since resume
            return self.state.with_(draining=drain)
        head = self._head[: min(len(self._head), cur.offset)]
        return TailState(cur.generation, self._inode, cur.offset, cur.line_no, digest(head), len(head),
                         digest(self._marker), drain)

    def _new_generation(self, st: FileStat, generation: int) -> None:
        self._cur = self._splitter(generation, 0, 0)
        self._inode = st.inode
        self._head = self._tail = self._marker = b""
        self._verify = False

    # -- one poll ---------------------------------------------------------------------------
    def _poll(self, known: FileStat | Unknown | None) -> list[Line]:
        self._early: list[Line] = []
        self._moved = False  # the path named another file by the time we read it (see _moved_meanwhile)
        st = self._stat(self.path) if isinstance(known, Unknown) else known
        self.missing = st is None
        if self._cur is None:
            if st is None:
                return []
            self._new_generation(st, 1)
        elif st is None:
            self._vanished = True
        else:
            self._check_identity(st)
        lines = self._early + self._poll_drain() + self._read_between()
        if st is not None and not self._moved:
            lines += self._read_current(st)
        return lines

    def _stat(self, path: str) -> FileStat | None:
        try:
            return self.transport.stat(path)
        except SourceMissing:
            return None

    def _check_identity(self, st: FileStat) -> None:
        cur = self._cur
        assert cur is not None
        if st.inode != self._inode or self._vanished:
            self._switch(st, recreated=self._vanished)
            self._vanished = False
        elif st.size < cur.read_pos or (self._verify and self._rewritten(st)):
            self._early += self._truncated(st)

    def _switch(self, st: FileStat, recreated: bool) -> None:
        """The path names another file: a rename rotation (old inode found nearby) or a replace."""
        cur = self._cur
        assert cur is not None
        old = self._reader().find(self._inode)
        if old is not None and old != self.path:
            self.stats.rotations += 1
            self._finish_drain()
            split = self._splitter(cur.generation, cur.offset, cur.line_no)
            self._drain = Drain(split, self._inode, old, time.monotonic())
            self._between = self._reader().rotated_between(old, (self._inode, st.inode), cur.generation)
            self._new_generation(st, cur.generation + 1 + len(self._between))
            return
        self.stats.replacements += 1
        old_inode, self._inode = self._inode, st.inode
        self._cur = self._splitter(cur.generation, cur.offset, cur.line_no)
        # same leading bytes after a rename-over = an atomic rewrite that only appended
        if recreated or not self._verified(st):
            self._inode = old_inode
            self._new_generation(st, cur.generation + 1)

    def _verified(self, st: FileStat) -> bool:
        """Does the file still hold what we committed (head fingerprint, bytes before offset)?"""
        cur, state = self._cur, self.state
        assert cur is not None
        if state is None or st.size < cur.offset:
            return st.size >= cur.offset and state is not None
        head_n = min(HEAD_BYTES, cur.offset)
        m = min(MARKER_BYTES, cur.offset)
        head = self.transport.read(self.path, 0, head_n) if head_n else b""
        marker = self.transport.read(self.path, cur.offset - m, m) if m else b""
        if digest(head[: state.head_len]) != state.fingerprint or digest(marker) != state.marker:
            return False
        self._head, self._tail, self._marker = head, marker, marker
        self._verify = False
        return True

    def _read_current(self, st: FileStat) -> list[Line]:
        cur = self._cur
        assert cur is not None
        avail = st.size - cur.read_pos
        self.size_seen = st.size
        self.behind = avail > self.read_chunk
        if avail <= 0:
            return []
        m = len(self._tail)
        data = self.transport.read(self.path, cur.read_pos - m, min(avail, self.read_chunk) + m)
        if data[:m] != self._tail:  # rewritten under us since the last read, or another file by now
            self.behind = True
            return [] if self._moved_meanwhile() else self._truncated(st)
        if m == 0 and self._moved_meanwhile():  # no bytes of ours to compare the read with
            self.behind = True
            return []
        return self._feed(data[m:])

    def _rewritten(self, st: FileStat) -> bool:
        """Resumed: the file at the path no longer holds what we committed, and is still our inode."""
        return not self._verified(st) and not self._moved_meanwhile()

    def _moved_meanwhile(self) -> bool:
        """Does the path name another file than this poll's stat said (a rotation between the stat
        and a read by the path)? Then the bytes just read were that file's, not a rewrite of ours:
        they are dropped, and the next poll's stat sees the rotation and drains our file by inode."""
        now = self._stat(self.path)
        self._moved = now is None or now.inode != self._inode
        return self._moved

    def _feed(self, data: bytes) -> list[Line]:
        cur = self._cur
        assert cur is not None
        base = cur.read_pos
        if len(self._head) < HEAD_BYTES and base == len(self._head):
            self._head += data[: HEAD_BYTES - len(self._head)]
        before = cur.truncated_lines, cur.replaced_lines
        lines = cur.feed(data)
        self.stats.truncated_lines += cur.truncated_lines - before[0]
        self.stats.replaced_lines += cur.replaced_lines - before[1]
        self.stats.bytes_read += len(data)
        if lines:
            upto = cur.offset - base
            self._marker = (self._tail + data[max(0, upto - MARKER_BYTES) : upto])[-MARKER_BYTES:]
        self._tail = (self._tail + data[-MARKER_BYTES:])[-MARKER_BYTES:]
        return lines

    def _truncated(self, st: FileStat) -> list[Line]:
        """Truncated or rewritten in place: the new content is the next generation, from 0. If a
        copy of the old one sits next to it (copytruncate), its rest is drained first, with the old
        generation's numbers. Returns the lines of an older drain that had to be finished."""
        cur = self._cur
        assert cur is not None
        old = self._snapshot()  # what we committed of the old generation (digests only)
        copy = find_copy(self.transport, self.path, old, st.inode) if old is not None else None
        self.stats.truncations += 1  # after the look-up: a dropped connection retries it uncounted
        finished: list[Line] = []
        if copy is not None:
            if self._drain is not None:  # one drain at a time: read the older generation out now
                finished = self._poll_drain(final=True)
            self.stats.copies_drained += 1
            split = self._splitter(cur.generation, cur.offset, cur.line_no)
            self._drain = Drain(split, copy.inode, copy.path, time.monotonic(), grows=False)
        self._new_generation(st, cur.generation + 1)
        return finished

    # -- an old generation after a rename or a copytruncate (collectors/tail_drain.py) ----------
    def _reader(self) -> DrainReader:
        return DrainReader(self.transport, self.path, self.stats, read_chunk=self.read_chunk,
                           rotate_wait=self.rotate_wait)

    def _read_between(self) -> list[Line]:
        lines: list[Line] = []
        for gen in self._between:  # a reader only for a generation to read: most polls have none
            lines += self._reader().read_whole(gen, self._splitter(gen.generation, 0, 0))
        self._between = []
        return lines

    def _poll_drain(self, final: bool = False) -> list[Line]:
        if self._drain is None:
            return []
        lines, done = self._reader().run(self._drain, final)
        if done:
            self._drain = None
        return lines

    def _finish_drain(self) -> None:
        if self._drain is not None:  # a second rotation before the first drained: read it out now
            self._early += self._poll_drain(final=True)
