"""The one place where paramiko and socket errors become collector errors."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

import paramiko

from kvwatch.collectors.base import (
    AuthFailed,
    CollectorError,
    ConnectFailed,
    HostKeyRejected,
    SourceMissing,
    SourceUnreadable,
    StreamClosed,
)

# paramiko raises AuthenticationException with these texts when the connection closed or stalled
# during authentication (sshd's MaxStartups or LoginGraceTime under load, a dropped link), not when
# the server refused the key. A refusal waits a minute before the next try; these do not.
DROPPED_DURING_AUTH = frozenset({"Authentication failed: transport shut down or saw EOF", "Authentication timeout."})


BANNER_BREAKS_SFTP = (
    "the host's shell prints text on non-interactive sessions (an echo or banner in ~/.bashrc, ~/.profile"
    " or /etc/bash.bashrc), which breaks SFTP; print it only in interactive shells (case $- in *i*)"
)


@contextmanager
def map_ssh_errors(what: str, *, connecting: bool = False) -> Iterator[None]:
    """Translate errors raised inside the block; `what` names the host/path in the message.

    While `connecting`, network failures are ConnectFailed (the host is unreachable); afterwards
    they are StreamClosed (an established connection dropped or stalled).
    """
    lost: type[CollectorError] = ConnectFailed if connecting else StreamClosed
    try:
        yield
    except CollectorError:
        raise
    except paramiko.BadHostKeyException as exc:
        raise HostKeyRejected(
            f"{what}: host key CHANGED (got {exc.key.get_name()} {exc.key.fingerprint}, "
            f"known_hosts has {exc.expected_key.fingerprint}); refusing to connect"
        ) from exc
    except paramiko.AuthenticationException as exc:
        if str(exc) in DROPPED_DURING_AUTH:  # the server went away, it did not say no: retry soon
            raise lost(f"{what}: connection lost during authentication ({exc})") from exc
        raise AuthFailed(f"{what}: authentication refused ({exc})") from exc
    except paramiko.ChannelException as exc:
        raise lost(f"{what}: channel refused ({exc.text})") from exc
    except paramiko.SFTPError as exc:
        if "Garbage packet" in str(exc):  # the first bytes SFTP read were text, not its version packet
            raise ConnectFailed(f"{what}: {BANNER_BREAKS_SFTP}") from exc
        raise lost(f"{what}: SFTP: {exc}") from exc
    except paramiko.SSHException as exc:
        if "known_hosts" in str(exc):
            raise HostKeyRejected(f"{what}: host key unknown ({exc}); add it to known_hosts") from exc
        raise lost(f"{what}: {exc or type(exc).__name__}") from exc
    except FileNotFoundError as exc:
        raise SourceMissing(f"{what}: no such file") from exc
    except TimeoutError as exc:
        raise lost(f"{what}: timed out") from exc
    except EOFError as exc:
        raise lost(f"{what}: connection closed") from exc
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise SourceMissing(f"{what}: no such file") from exc
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise SourceUnreadable(f"{what}: permission denied") from exc
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENOTDIR):
            raise SourceUnreadable(f"{what}: {exc.strerror}") from exc
        if exc.errno is None and not connecting:
            # paramiko's SFTP status "Failure" (a directory, a symlink loop, ...): the server answered
            # about this file, so the connection is fine. Socket errors always carry an errno.
            raise SourceUnreadable(f"{what}: {exc} (SFTP)") from exc
        raise lost(f"{what}: {exc.strerror or exc}") from exc
