"""File access on this machine: the demo's transport, and the reference the SSH one is tested against."""

from __future__ import annotations

import glob as globmod
import os
import socket
import subprocess

from kvwatch.collectors.base import CollectorError, CommandResult, FileStat, SourceMissing, SourceUnreadable
from kvwatch.collectors.stream import LocalStream

TUNNEL_CONNECT_TIMEOUT = 5.0


class LocalTransport:
    name = "local"

    def stat(self, path: str) -> FileStat:
        try:
            st = os.stat(path)
        except FileNotFoundError as exc:
            raise SourceMissing(path) from exc
        except OSError as exc:  # on this machine every other file error is this file's alone
            raise SourceUnreadable(f"{path}: {exc.strerror}") from exc
        return FileStat(inode=st.st_ino, size=st.st_size, mtime=st.st_mtime)

    def stat_many(self, paths: list[str]) -> dict[str, FileStat | None]:
        out: dict[str, FileStat | None] = {}
        for path in paths:
            try:
                out[path] = self.stat(path)
            except SourceMissing:
                out[path] = None
            except SourceUnreadable:
                continue  # left out: the tail's own stat raises it for that one source
        return out

    def read(self, path: str, offset: int, length: int) -> bytes:
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                return handle.read(length)
        except FileNotFoundError as exc:
            raise SourceMissing(path) from exc
        except OSError as exc:
            raise SourceUnreadable(f"{path}: {exc.strerror}") from exc

    def glob(self, pattern: str) -> list[str]:
        return sorted(globmod.glob(os.path.expanduser(pattern)))

    def run(self, argv: list[str], timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CollectorError(f"{argv[0]}: {exc}") from exc
        return CommandResult(done.returncode, done.stdout, done.stderr)

    def find_inode(self, directory: str, inode: int) -> str | None:
        """The file in `directory` with this inode (a log renamed away by rotation), or None."""
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    # d_ino from readdir differs from st_ino on overlayfs: stat each entry
                    if entry.is_file() and entry.stat().st_ino == inode:
                        return entry.path
        except OSError:
            return None
        return None

    def regular_files(self, directory: str) -> list[str]:
        """Paths of the regular files in `directory` (symlinks not followed, as over SFTP)."""
        try:
            with os.scandir(os.path.expanduser(directory)) as entries:
                return sorted(e.path for e in entries if e.is_file(follow_symlinks=False))
        except OSError:
            return []

    def open_stream(self, argv: list[str], pty: bool = False, bulk: bool = False) -> LocalStream:
        """`pty` and `bulk` are for SSH; a local child is killed on close anyway, and a pipe is fast."""
        return LocalStream(argv)

    def open_tunnel(self, host: str, port: int) -> socket.socket:
        """The server is on this machine: a plain TCP connection."""
        try:
            return socket.create_connection((host, port), timeout=TUNNEL_CONNECT_TIMEOUT)
        except OSError as exc:
            raise CollectorError(f"connect to {host}:{port}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        return None
