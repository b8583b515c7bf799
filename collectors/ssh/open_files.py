"""SFTP handles kept open between a file's reads, each tied to the inode its path last stat'ed to.

A followed log is read every round: opening and closing it each time made three SFTP round trips of
one read, and at 256 hosts those round trips (and the interpreter-lock hand-offs each one costs)
were most of a line's wait (bench/collect_fleet.py). A kept handle reads the file it was opened on,
so it serves a read only while the path's latest stat (collectors/ssh/stat_batch.py: SFTP has no
inodes) still names that inode; a replaced, rotated or vanished path opens afresh, as before. A
handle idle past IDLE_S is closed so that a deleted log's space is not held on the host for long.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass

import paramiko

from kvwatch.collectors.base import FileStat

KEPT_MAX = 16  # per connection: a host's followed files (server log, client log, a few output files)
IDLE_S = 30.0
# Paths whose latest inode is remembered, the most recently stat'ed kept: an output glob of a job days
# in can match thousands of files, and a path forgotten here is only opened afresh for its next read.
INODES_MAX = 1024


@dataclass(slots=True)
class _Kept:
    handle: paramiko.SFTPFile
    inode: int
    used: float


class OpenFiles:
    """Per connection; the caller holds the SFTP client's lock around every call."""

    def __init__(self) -> None:
        self._inodes: OrderedDict[str, int] = OrderedDict()  # path -> inode of its latest stat
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    def saw(self, path: str, found: FileStat | None) -> None:
        """A stat's answer for `path` (None: missing); a handle on another file is closed."""
        if found is None:
            self._inodes.pop(path, None)
        else:
            self._inodes[path] = found.inode
            self._inodes.move_to_end(path)
            while len(self._inodes) > INODES_MAX:
                self._inodes.popitem(last=False)
        kept = self._kept.get(path)
        if kept is not None and (found is None or kept.inode != found.inode):
            self._drop(path)

    def remembered(self) -> list[str]:
        """The paths whose inode is known, least recently stat'ed first."""
        return list(self._inodes)

    def read(self, sftp: paramiko.SFTPClient, path: str, offset: int, length: int) -> bytes:
        now = time.monotonic()
        self._close_idle(now)
        inode = self._inodes.get(path)
        if inode is None:  # never stat'ed here: which file the path names is unknown, keep nothing
            with sftp.open(path, "rb") as handle:
                return _read_at(handle, offset, length)
        kept = self._kept.get(path)
        if kept is None:
            kept = self._kept[path] = _Kept(sftp.open(path, "rb"), inode, now)
            while len(self._kept) > KEPT_MAX:
                self._drop(next(iter(self._kept)))
        self._kept.move_to_end(path)
        kept.used = now
        try:
            return _read_at(kept.handle, offset, length)
        except BaseException:
            del self._kept[path]  # not closed: after a failed read the connection is likely gone
            raise

    def _close_idle(self, now: float) -> None:
        for path in [p for p, kept in self._kept.items() if now - kept.used > IDLE_S]:
            self._drop(path)

    def _drop(self, path: str) -> None:
        kept = self._kept.pop(path, None)
        if kept is not None:
            with contextlib.suppress(Exception):  # a dead connection's handle is gone either way
                kept.handle.close()


def _read_at(handle: paramiko.SFTPFile, offset: int, length: int) -> bytes:
    handle.seek(offset)
    return bytes(handle.read(length))
