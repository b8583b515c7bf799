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

from dataclasses import dataclass
from typing import NamedTuple, Protocol


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
    """Identity and size of a file on a host."""

    inode: int
    size: int


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


class Transport(Protocol):
    """File access on one host. Implementations: `LocalTransport`, `SshTransport`."""

    name: str

    def stat(self, path: str) -> FileStat: ...

    def read(self, path: str, offset: int, length: int) -> bytes: ...

    def glob(self, pattern: str) -> list[str]: ...

    def run(self, argv: list[str], timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        """Run one command. `argv` is never interpreted by a shell unquoted: the SSH transport
        quotes every element for the remote POSIX shell."""
        ...

    def close(self) -> None: ...
