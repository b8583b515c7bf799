"""The collector contract: transports move bytes, tails turn them into lines.

A `Transport` runs commands and reads files on one host (this machine, or one over SSH). A `Tail`
follows one path on a transport and yields `Line`s: complete lines only, in order, each with the
byte offset just past it, so that the consumer can store records and the resume offset together.
Tails know nothing of log formats.

Errors, translated once at the boundary (paramiko and OS errors never escape a collector):

    CollectorError
     ├── ConnectFailed        host unreachable, refused, timed out
     │    └── HostKeyRejected unknown or changed host key: never retried automatically
     ├── AuthFailed           the server refused our credentials
     ├── SourceMissing        the path does not exist (yet)
     └── StreamClosed         the connection dropped while reading
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol


class CollectorError(Exception):
    """Base of everything a collector raises."""


class ConnectFailed(CollectorError):
    """The host could not be reached."""


class HostKeyRejected(ConnectFailed):
    """The host key is unknown or differs from known_hosts."""


class AuthFailed(CollectorError):
    """Authentication was refused."""


class SourceMissing(CollectorError):
    """The file is not there."""


class SourceUnreadable(CollectorError):
    """This one file cannot be read (permission, a directory, a symlink loop); the host is fine."""


class StreamClosed(CollectorError):
    """The connection ended while reading."""


@dataclass(frozen=True, slots=True)
class FileStat:
    """Identity, size and modification time of a file on a host."""

    inode: int
    size: int
    # Epoch seconds (whole ones over SSH); 0: not known. Not part of the identity: a stat over SSH
    # equals one of the same file here.
    mtime: float = field(default=0.0, compare=False)


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a command run on a host returned."""

    exit_status: int
    stdout: bytes
    stderr: bytes


class Line(NamedTuple):
    """One complete line of a followed file.

    `generation` changes whenever the file behind the path is a different one (rotation,
    truncation); `offset` is the byte offset just past this line's newline in that file, and
    `line_no` its 1-based number there.

    A NamedTuple rather than a frozen dataclass: equally immutable, and a catch-up makes millions
    of them (a frozen dataclass costs ~3x more per line to build).
    """

    source: str
    generation: int
    offset: int
    line_no: int
    text: str


class Stream(Protocol):
    """A long-running command's stdout, read as it comes (tail -F, nvidia-smi -l, a catch-up read)."""

    def read(self, timeout: float) -> bytes | None:
        """Next bytes; None when nothing arrived within `timeout`; b"" at end of stream."""
        ...

    def stderr(self) -> bytes: ...

    def close(self) -> None: ...


class Tunnel(Protocol):
    """A byte connection to host:port as seen from the monitored host (SGLang's /metrics)."""

    def settimeout(self, timeout: float | None, /) -> None: ...

    def sendall(self, data: bytes, /) -> None: ...

    def makefile(self, mode: Literal["rb"], /) -> Any: ...

    def close(self) -> None: ...


class Transport(Protocol):
    """Everything a collector does on one host. Implementations, by name in
    `collectors/transports.py`: `local` (`LocalTransport`) and `ssh` (`SshTransport`)."""

    name: str

    def stat(self, path: str) -> FileStat: ...

    def stat_many(self, paths: list[str]) -> dict[str, FileStat | None]:
        """One stat for many files: None for a missing one; an unreadable one is left out."""
        ...

    def read(self, path: str, offset: int, length: int) -> bytes: ...

    def glob(self, pattern: str) -> list[str]: ...

    def run(self, argv: list[str], timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        """Run one command. `argv` is never interpreted by a shell unquoted: the SSH transport
        quotes every element for the remote POSIX shell."""
        ...

    def open_stream(self, argv: list[str], pty: bool = False, bulk: bool = False) -> Stream:
        """A long-running command (same quoting as `run`). `pty`: the command ends when we hang up;
        `bulk`: tuned for throughput (catch-up reads)."""
        ...

    def open_tunnel(self, host: str, port: int) -> Tunnel: ...

    def find_inode(self, directory: str, inode: int) -> str | None:
        """The file in `directory` with this inode (a log renamed away by rotation), or None."""
        ...

    def regular_files(self, directory: str) -> list[str]:
        """Paths of the regular files in `directory`, symlinks not followed."""
        ...

    def close(self) -> None: ...
