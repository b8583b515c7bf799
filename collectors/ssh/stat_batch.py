"""Cheap remote `stat` with the inode, through one long-lived process on an exec channel.

SFTP v3 attributes carry no inode, and opening an exec channel per poll costs a round trip plus a
process start. One process per host answers one text line per request instead, tagged with its
request number so a stale line (or a shell start-up file's chatter) is never misread.

That process is `perl` where the host has it (perl-base is part of every Debian and Ubuntu system):
it stats with the system call, so a poll starts no process on the host. Without perl it is `sh`,
which forks a subshell and a `stat` per path per poll: at 2 polls a second and 256 hosts that was
about 2,000 process starts a second on the bench's one machine (bench/collect_fleet.py). Paths reach
perl hex-encoded (no quoting at all) and `sh` only shell-quoted.
"""

from __future__ import annotations

import secrets
import shlex
import threading
import time

import paramiko

from kvwatch.collectors.base import CollectorError, FileStat, SourceMissing, StreamClosed

# An answer is about 20 bytes a path: 64 KiB failed a poll of 6,000 output files; this still bounds garbage.
_MAX_LINE = 4 * 1024 * 1024
# Answers "inode size mtime" a path, or "- - -" where stat(2) fails (missing, a symlink loop, a parent not
# searchable), as the `sh` loop's `[ -e ]` decides: the read that follows names the error. stat() follows
# symlinks, as `stat -L`; mtime in whole seconds, as %Y. HELLO is replaced by the connection's own hello.
PERL_STAT_SERVER = (
    '$| = 1; print "HELLO perl\\n";'
    " while (defined(my $line = <STDIN>)) { chomp $line; my ($tag, @paths) = split / /, $line; my @out;"
    ' for my $hex (@paths) { my @st = stat(pack("H*", $hex)); push @out, @st ? "$st[1] $st[7] $st[9]" : "- - -"; }'
    ' print "$tag @out\\n"; }'
)


def start_lines(hello: str) -> str:
    """What the channel's `sh` is sent first: it answers `hello perl` or `hello sh`. The hello is new each
    connection, so no login banner or start-up file's output can pass for it. Nothing else is sent before
    it: a shell may read ahead of the line that starts perl, and perl must see every request. perl is not
    exec'd: one that cannot start (a broken install) leaves the shell to answer instead."""
    script = PERL_STAT_SERVER.replace("HELLO", hello)
    return f"command -v perl >/dev/null 2>&1 && perl -e '{script}'\necho \"{hello} sh\"\n"


class StatShell:
    def __init__(self, chan: paramiko.Channel, what: str, timeout: float) -> None:
        self._chan = chan
        self._what = what
        self._timeout = timeout
        self._buf = b""
        self._seq = 0
        self._lock = threading.Lock()
        self._server: str | None = None  # "perl" or "sh", once the hello came

    @property
    def server(self) -> str | None:
        """What answers: "perl" (no process start a poll) or "sh"; None before the first request."""
        return self._server

    def _started(self) -> str:
        """Start the answering process on the first request (under the lock) and learn which it is."""
        if self._server is None:
            hello = f"kvwatch-stat-{secrets.token_hex(8)}"
            self._send(start_lines(hello))
            deadline = time.monotonic() + self._timeout
            while not (line := self._line(deadline).decode(errors="replace")).startswith(hello + " "):
                pass  # a start-up file's output before the hello
            self._server = "perl" if line.split()[1] == "perl" else "sh"
        return self._server

    def stat(self, path: str) -> FileStat:
        with self._lock:
            if self._started() == "perl":
                found = self._stat_perl([path])[0]
                if found is None:
                    raise SourceMissing(f"{self._what}:{path}: no such file")
                return found
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
            if self._started() == "perl":
                return self._stat_perl(paths)
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
        return self._stats(paths, fields)

    def _stat_perl(self, paths: list[str]) -> list[FileStat | None]:
        self._seq += 1
        tag = str(self._seq)
        self._send(" ".join([tag, *(p.encode().hex() for p in paths)]) + "\n")
        return self._stats(paths, self._answer(tag).split())

    def _stats(self, paths: list[str], fields: list[str]) -> list[FileStat | None]:
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
