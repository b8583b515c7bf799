"""Cheap remote `stat` with the inode, through one long-lived `sh` on an exec channel.

SFTP v3 attributes carry no inode, and opening an exec channel per poll costs a round trip plus a
process start. One shell per host answers one text line per request instead; paths reach it only
shell-quoted, and every answer is tagged with its request number so a stale line is never misread.
"""

from __future__ import annotations

import shlex
import threading
import time

import paramiko

from kvwatch.collectors.base import CollectorError, FileStat, SourceMissing, StreamClosed

_MAX_LINE = 64 * 1024


class StatShell:
    def __init__(self, chan: paramiko.Channel, what: str, timeout: float) -> None:
        self._chan = chan
        self._what = what
        self._timeout = timeout
        self._buf = b""
        self._seq = 0
        self._lock = threading.Lock()

    def stat(self, path: str) -> FileStat:
        with self._lock:
            self._seq += 1
            tag = str(self._seq)
            quoted = shlex.quote(path)
            self._send(f'echo "{tag} $(LC_ALL=C stat -L -c \'%i %s %Y\' -- {quoted} 2>&1 | head -n 1)"\n')
            answer = self._answer(tag)
        fields = answer.split()
        if len(fields) == 3 and all(f.isdigit() for f in fields):
            return FileStat(inode=int(fields[0]), size=int(fields[1]), mtime=float(fields[2]))
        if "No such file" in answer or "Not a directory" in answer:
            raise SourceMissing(f"{self._what}:{path}: no such file")
        raise CollectorError(f"{self._what}:{path}: stat failed: {answer.strip()[:200]}")

    def stat_many(self, paths: list[str]) -> list[FileStat | None]:
        """One request for all paths; None for a missing one (`!` = exists but stat failed).
        Three fields a path: inode, size, mtime."""
        if not paths:
            return []
        with self._lock:
            self._seq += 1
            tag = str(self._seq)
            quoted = " ".join(shlex.quote(p) for p in paths)
            # A failed stat of a path that exists is asked again: a file created between the two
            # (a log being recreated) is a stat, not a failure; "! !" only if it fails twice.
            st = 'LC_ALL=C stat -L -c "%i %s %Y" -- "$p" 2>/dev/null'
            loop = (f'for p in {quoted}; do {st} || {{ [ -e "$p" ] && {{ {st} || echo "! ! !"; }} || echo "- - -"; }};'
                    ' done | tr "\\n" " "')
            self._send(f'echo "{tag} $({loop})"\n')
            fields = self._answer(tag).split()
        if len(fields) != 3 * len(paths):
            raise StreamClosed(f"{self._what}: garbled stat answer")
        out: list[FileStat | None] = []
        for path, ino, size, mtime in zip(paths, fields[::3], fields[1::3], fields[2::3], strict=True):
            if ino == "!":
                raise CollectorError(f"{self._what}:{path}: stat failed (permission?)")
            out.append(None if ino == "-" else FileStat(inode=int(ino), size=int(size), mtime=float(mtime)))
        return out

    def _send(self, text: str) -> None:
        try:
            self._chan.settimeout(self._timeout)
            self._chan.sendall(text.encode())
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise StreamClosed(f"{self._what}: stat shell closed ({exc})") from exc

    def _answer(self, tag: str) -> str:
        deadline = time.monotonic() + self._timeout
        prefix = tag.encode() + b" "
        while True:
            line = self._line(deadline)
            if line.startswith(prefix):
                return line[len(prefix) :].decode(errors="replace")

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StreamClosed(f"{self._what}: stat got no answer within {self._timeout:g} s")
            self._chan.settimeout(left)
            try:
                chunk = self._chan.recv(4096)
            except TimeoutError:
                continue
            except (OSError, EOFError, paramiko.SSHException) as exc:
                raise StreamClosed(f"{self._what}: stat shell closed ({exc})") from exc
            if not chunk:
                raise StreamClosed(f"{self._what}: stat shell ended")
            self._buf += chunk
            if len(self._buf) > _MAX_LINE:
                raise StreamClosed(f"{self._what}: stat shell sent garbage")
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def close(self) -> None:
        self._chan.close()
