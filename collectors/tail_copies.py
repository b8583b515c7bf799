"""Find the copy a copytruncate rotation made of the generation we were reading.

logrotate's `copytruncate` does `cp server.log server.log.1; truncate server.log`: what the writer
appended after our last read is in the copy, not in the truncated file. A copy qualifies when its
name is the followed name plus a `.` or `-` suffix (`server.log.1`, `server.log.2` after the next
rotation, dateext `server.log-20261203`; compressed ones are skipped), it is longer than our resume
offset, and it holds exactly what we committed: the same head fingerprint and the same marker bytes
just before the offset (the digests TailState keeps, so this also works after a restart). Only a
single match counts: two candidates that both fit are ambiguous, and draining the wrong one would
store foreign lines.

Cost per truncation: one listing of the directory's regular files, one batched stat of the
candidates, and per candidate of the right name and size at most two small reads (the head, then the
marker only if the head matched), or one when the offset is small enough to read both at once.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Callable
from dataclasses import dataclass

from kvwatch.collectors.base import CollectorError, FileStat, SourceMissing, SourceUnreadable, Transport
from kvwatch.collectors.lines import HEAD_BYTES, MARKER_BYTES, TailState, digest

COMPRESSED = (".gz", ".xz", ".bz2", ".zst", ".lz4", ".zip")
ONE_READ_MAX = HEAD_BYTES + MARKER_BYTES  # up to this offset, head and marker come in one read


@dataclass(frozen=True, slots=True)
class Copy:
    path: str
    inode: int
    size: int


def candidates(path: str, listing: list[str]) -> list[str]:
    """The paths of `listing` named like a copy of `path`: its name plus a `.`/`-` suffix, not
    compressed (a compressed copy cannot be read at an offset)."""
    base = posixpath.basename(path)
    return [p for p in listing if _copy_name(base, posixpath.basename(p))]


def _copy_name(base: str, name: str) -> bool:
    return (len(name) > len(base) + 1 and name.startswith(base) and name[len(base)] in ".-"
            and not name.endswith(COMPRESSED))


def holds(state: TailState, read: Callable[[int, int], bytes]) -> bool:
    """Does the file behind `read(offset, length)` start with what `state` committed?

    Pure apart from `read`: the head fingerprint first (a stale copy of another generation differs
    there, one read), then the marker just before the offset."""
    offset, m = state.offset, min(MARKER_BYTES, state.offset)
    if offset <= ONE_READ_MAX:
        data = read(0, offset)
        return digest(data[: state.head_len]) == state.fingerprint and digest(data[offset - m :]) == state.marker
    if digest(read(0, state.head_len)) != state.fingerprint:
        return False
    return digest(read(offset - m, m)) == state.marker


def find_copy(transport: Transport, path: str, state: TailState, skip_inode: int) -> Copy | None:
    """The one copy of the generation `state` describes, or None (none, or more than one)."""
    if state.offset <= 0:  # nothing committed yet: any file would "match"
        return None
    found: dict[int, Copy] = {}  # by inode: hard links are one copy
    for name, st in stat_all(transport, candidates(path, sibling_files(transport, path))).items():
        if st is None or st.inode == skip_inode or st.size <= state.offset or st.inode in found:
            continue
        try:
            if holds(state, functools.partial(transport.read, name)):
                found[st.inode] = Copy(name, st.inode, st.size)
        except CollectorError as exc:
            if not _file_error(exc):
                raise
    return next(iter(found.values())) if len(found) == 1 else None


def sibling_files(transport: Transport, path: str) -> list[str]:
    """Regular files next to `path`, not a glob: a glob also yields directories (`server.log.d/`),
    and reading one over SFTP fails like a dropped connection."""
    return transport.regular_files(posixpath.dirname(path) or ".")


def stat_all(transport: Transport, paths: list[str]) -> dict[str, FileStat | None]:
    try:
        return transport.stat_many(paths)
    except CollectorError as exc:  # one unreadable entry fails the batch: ask one by one
        if not _file_error(exc):
            raise
    out: dict[str, FileStat | None] = {}
    for p in paths:
        try:
            out[p] = transport.stat(p)
        except CollectorError as exc:
            if not _file_error(exc):
                raise
            out[p] = None
    return out


def _file_error(exc: CollectorError) -> bool:
    """Gone or unreadable (this candidate only) rather than a lost connection (everything)."""
    return isinstance(exc, (SourceMissing, SourceUnreadable)) or type(exc) is CollectorError
