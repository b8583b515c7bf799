"""The SSH transport: one paramiko connection per host, host keys checked, every wait bounded.

- Host keys: RejectPolicy plus the configured known_hosts (or ~/.ssh/known_hosts). An unknown or
  changed key raises HostKeyRejected and is never accepted automatically.
- Liveness: we create the TCP socket ourselves with keepalive and TCP_USER_TIMEOUT, because
  paramiko's own keepalive never waits for a reply and cannot notice a dead peer.
- Data: small reads through one SFTP client (exact offsets, binary-safe); large reads through one
  streaming exec `tail -c +N`, plain or piped through `gzip -1` as measured fastest
  (collectors/ssh/catchup.py; SFTP's 32 KiB round trips manage ~8 MB/s, exec ~200 MB/s).
- Inode: SFTP has none, so `stat` goes through a long-lived process: the host's perl, or sh
  (collectors/ssh/stat_batch.py).
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob as globmod
import logging
import os
import posixpath
import socket
import stat as statmod
import threading
from collections.abc import Callable
from dataclasses import dataclass

import paramiko

from kvwatch.collectors.base import CollectorError, CommandResult, FileStat, SourceMissing, StreamClosed
from kvwatch.collectors.ssh.catchup import Catchup, Compression
from kvwatch.collectors.ssh.errors import map_ssh_errors
from kvwatch.collectors.ssh.exec_channel import ExecStream, open_exec, quote_argv, run_channel
from kvwatch.collectors.ssh.framing import Unframer, framed, new_marker, unframe
from kvwatch.collectors.ssh.open_files import OpenFiles
from kvwatch.collectors.ssh.stat_batch import StatShell
from kvwatch.collectors.ssh.target import SshTarget

log = logging.getLogger(__name__)
SFTP_READ_MAX = 256 * 1024


@dataclass(frozen=True, slots=True)
class SshOptions:
    connect_timeout: float = 10.0
    io_timeout: float = 10.0
    keepalive_interval: int = 5  # paramiko keepalive: keeps NATs open, detects nothing by itself
    tcp_keepidle: int = 5
    tcp_keepintvl: int = 2
    tcp_keepcnt: int = 3
    tcp_user_timeout_ms: int = 8000
    # large reads: "auto" times plain and gzip streams on the connection; "gzip"/"off" force one
    compression: Compression = "auto"
    # how the TCP connection is made (tests: from inside a network namespace); default tcp_socket
    socket_factory: Callable[[str, int, SshOptions], socket.socket] | None = None


def tcp_socket(host: str, port: int, opts: SshOptions) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=opts.connect_timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # else Nagle + delayed ACK: 40 ms a request
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if hasattr(socket, "TCP_KEEPIDLE"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, opts.tcp_keepidle)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, opts.tcp_keepintvl)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, opts.tcp_keepcnt)
    if hasattr(socket, "TCP_USER_TIMEOUT"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, opts.tcp_user_timeout_ms)
    return sock


class GcmFirstTransport(paramiko.Transport):
    """paramiko's cipher list with AES-GCM first (OpenSSH's own order also puts it before CTR).

    GCM is an AEAD cipher: no separate HMAC pass over every packet, which measured ~37 % less client
    CPU per byte than paramiko's default aes128-ctr + hmac-sha2-256 (BENCHMARKS.md, catch-up).
    Every other cipher stays allowed for servers without GCM.
    """

    _preferred_ciphers = (
        "aes128-gcm@openssh.com",
        "aes256-gcm@openssh.com",
        *(c for c in paramiko.Transport._preferred_ciphers  # type: ignore[attr-defined]  # not in stubs
          if not c.endswith("-gcm@openssh.com")),
    )
    # paramiko's reader thread wakes every 0.1 s while the connection is quiet, to look for a close,
    # a keepalive or a rekey due: 256 hosts made 2,560 wake-ups a second, each taking the interpreter
    # lock from the threads that parse and store (bench/collect_fleet.py). Data still wakes it at once;
    # a close is noticed within this, and keepalives are seconds apart anyway.
    _active_check_timeout = 1.0


def open_client(target: SshTarget, opts: SshOptions, sock: object | None = None) -> paramiko.SSHClient:
    """Connect and authenticate one hop; `sock` is a socket or a direct-tcpip channel of the hop before."""
    client = paramiko.SSHClient()
    with map_ssh_errors(target.label, connecting=True):
        if target.known_hosts:
            if not os.path.exists(target.known_hosts):
                raise CollectorError(f"{target.label}: known_hosts file {target.known_hosts} not found")
            client.load_host_keys(target.known_hosts)
        else:
            client.load_system_host_keys()
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        if sock is None:
            sock = (opts.socket_factory or tcp_socket)(target.host, target.port, opts)
        files = list(target.identity_files)
        client.connect(
            hostname=target.host,
            port=target.port,
            username=target.user or None,
            key_filename=files or None,  # type: ignore[arg-type]  # paramiko accepts a list too
            look_for_keys=not files,
            allow_agent=not files,
            timeout=opts.connect_timeout,
            banner_timeout=opts.connect_timeout,
            auth_timeout=opts.connect_timeout,
            channel_timeout=opts.connect_timeout,
            sock=sock,  # type: ignore[arg-type]
            transport_factory=GcmFirstTransport,  # type: ignore[arg-type]  # stubs: a narrower protocol
        )
        transport = client.get_transport()
        if transport is None:
            raise StreamClosed(f"{target.label}: no transport after connect")
        transport.set_keepalive(opts.keepalive_interval)
    return client


class SshTransport:
    """The Transport protocol over SSH. Thread-safe: SFTP and the stat shell are behind locks."""

    def __init__(self, target: SshTarget, opts: SshOptions | None = None, name: str | None = None) -> None:
        self.target = target
        self.opts = opts or SshOptions()
        self.name = name or target.label
        self._clients: list[paramiko.SSHClient] = []
        self._sftp: paramiko.SFTPClient | None = None
        self._shell: StatShell | None = None
        self._home = ""
        self._lock = threading.Lock()
        self._open_files = OpenFiles()  # under _lock, as the SFTP client they read through
        self._catchup = Catchup(self, self.opts.compression, self.opts.io_timeout)
        self._marker = new_marker()
        self.banner = ""  # what the host's login shell prints first, when it does (collectors/ssh/framing.py)

    # -- connection -------------------------------------------------------------------------
    def connect(self) -> SshTransport:
        """Open the connection through every ProxyJump hop; host keys are checked per hop."""
        sock: object | None = None
        try:
            for hop in (*self.target.jumps, self.target):
                if self._clients:
                    with map_ssh_errors(f"{hop.label} (ProxyJump hop)", connecting=True):
                        sock = self._paramiko().open_channel(
                            "direct-tcpip", (hop.host, hop.port), ("127.0.0.1", 0),
                            timeout=self.opts.connect_timeout,
                        )
                self._clients.append(open_client(hop, self.opts, sock))
            with map_ssh_errors(self.name, connecting=True):
                self._sftp = self._clients[-1].open_sftp()
                self._sftp.get_channel().settimeout(self.opts.io_timeout)  # type: ignore[union-attr]
                self._home = self._sftp.normalize(".")
                chan = open_exec(self._paramiko(), "sh", self.opts.io_timeout)
            self._shell = StatShell(chan, self.name, self.opts.io_timeout)
        except BaseException:
            self.close()
            raise
        return self

    def _paramiko(self) -> paramiko.Transport:
        transport = self._clients[-1].get_transport() if self._clients else None
        if transport is None or not transport.is_active():
            raise StreamClosed(f"{self.name}: not connected")
        return transport

    @property
    def connected(self) -> bool:
        transport = self._clients[-1].get_transport() if self._clients else None
        return bool(transport and transport.is_active())

    def close(self) -> None:
        for closeable in (self._catchup, self._shell, self._sftp, *reversed(self._clients)):
            if closeable is not None:
                # closing a dead connection may fail in any way; it is gone either way
                with contextlib.suppress(Exception):
                    closeable.close()
        self._open_files = OpenFiles()  # not under _lock (a hung read holds it): the old handles end with the session
        self._shell, self._sftp, self._clients = None, None, []
        self._catchup = Catchup(self, self.opts.compression, self.opts.io_timeout)

    # -- Transport protocol -----------------------------------------------------------------
    def abspath(self, path: str) -> str:
        """`~/x` and relative paths are relative to the remote home, as with scp."""
        if path == "~" or path.startswith("~/"):
            return posixpath.join(self._home, path[2:])
        return path if path.startswith("/") else posixpath.join(self._home, path)

    def stat(self, path: str) -> FileStat:
        if self._shell is None:
            raise StreamClosed(f"{self.name}: not connected")
        full = self.abspath(path)
        try:
            found = self._shell.stat(full)
        except SourceMissing:
            self._saw({full: None})
            raise
        self._saw({full: found})
        return found

    def stat_many(self, paths: list[str]) -> dict[str, FileStat | None]:
        """Several paths in one round trip (None = missing): one host poll costs one request."""
        if self._shell is None:
            raise StreamClosed(f"{self.name}: not connected")
        full = [self.abspath(p) for p in paths]
        found = self._shell.stat_many(full)
        self._saw(dict(zip(full, found, strict=True)))
        return dict(zip(paths, found, strict=True))

    def _saw(self, stats: dict[str, FileStat | None]) -> None:
        with self._lock:
            for path, found in stats.items():
                self._open_files.saw(path, found)

    def read(self, path: str, offset: int, length: int) -> bytes:
        full = self.abspath(path)
        if length > SFTP_READ_MAX:
            return self._catchup.read(full, offset, length)
        where = f"{self.name}:{full}"
        with self._lock, map_ssh_errors(where):
            return self._open_files.read(self._sftp_client(), full, offset, length)

    def glob(self, pattern: str) -> list[str]:
        """Expanded with SFTP listings and fnmatch here: the pattern never reaches a shell."""
        full = self.abspath(pattern)
        found = ["/"]
        for part in [p for p in full.split("/") if p]:
            nxt: list[str] = []
            for base in found:
                if not globmod.has_magic(part):
                    nxt.append(posixpath.join(base, part))
                    continue
                names = self._listdir(base)
                nxt.extend(posixpath.join(base, n) for n in names if fnmatch.fnmatchcase(n, part))
            found = nxt
        return sorted(p for p in found if self._exists(p))

    def run(self, argv: list[str], timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        with map_ssh_errors(f"{self.name}: {argv[0] if argv else '?'}"):
            command = framed(quote_argv(argv), self._marker)
            chan = open_exec(self._paramiko(), command, min(timeout, self.opts.io_timeout))
            result = run_channel(chan, stdin, timeout, f"{self.name}: {argv[0]}")
        banner, stdout = unframe(result.stdout, self._marker)
        self._note_banner(banner)
        return CommandResult(result.exit_status, stdout, result.stderr)

    def _note_banner(self, banner: bytes) -> None:
        if banner.strip() and not self.banner:
            self.banner = banner.decode(errors="replace")[:200]
            log.info("%s: the login shell prints %d bytes before every command (%r ...); kvwatch skips them",
                     self.name, len(banner), self.banner[:60])

    # -- extras used by tails, GPU and metrics -----------------------------------------------
    def open_stream(self, argv: list[str], pty: bool = False, bulk: bool = False) -> ExecStream:
        """A long-running command. `pty=True` for commands that may stay silent for hours (tail -F):
        closing the channel then hangs up the pty, so the remote process ends with us instead of
        lingering until its next write; output gets CRLF line ends (harmless for wake-ups/CSV).
        `bulk=True` for catch-up streams: a larger window and SSH packets (collectors/ssh/exec_channel.py)."""
        with map_ssh_errors(f"{self.name}: {argv[0] if argv else '?'}"):
            command = framed(quote_argv(argv), self._marker)
            chan = open_exec(self._paramiko(), command, self.opts.io_timeout, pty=pty, bulk=bulk)
        return ExecStream(chan, f"{self.name}: {argv[0]}", Unframer(self._marker))

    def open_tunnel(self, host: str, port: int) -> paramiko.Channel:
        """A direct-tcpip channel to host:port as seen from the remote host (SGLang /metrics)."""
        with map_ssh_errors(f"{self.name}: tunnel to {host}:{port}"):
            chan = self._paramiko().open_channel(
                "direct-tcpip", (host, port), ("127.0.0.1", 0), timeout=self.opts.io_timeout
            )
            chan.settimeout(self.opts.io_timeout)
            return chan

    def find_inode(self, directory: str, inode: int) -> str | None:
        """The path in `directory` whose inode is `inode` (a renamed-away log), or None."""
        for name in self._listdir(self.abspath(directory)):
            path = posixpath.join(self.abspath(directory), name)
            try:
                if self.stat(path).inode == inode:
                    return path
            except CollectorError:
                continue
        return None

    def regular_files(self, directory: str) -> list[str]:
        """Paths of the regular files in `directory`: one SFTP listing, modes included."""
        full = self.abspath(directory)
        with self._lock:
            try:
                with map_ssh_errors(f"{self.name}:{full}"):
                    entries = self._sftp_client().listdir_attr(full)
            except CollectorError as exc:
                if isinstance(exc, StreamClosed):
                    raise
                return []
        return sorted(posixpath.join(full, e.filename) for e in entries if statmod.S_ISREG(e.st_mode or 0))

    def _listdir(self, directory: str) -> list[str]:
        with self._lock:
            try:
                with map_ssh_errors(f"{self.name}:{directory}"):
                    return sorted(self._sftp_client().listdir(directory))
            except CollectorError as exc:
                if isinstance(exc, StreamClosed):
                    raise
                return []

    def _exists(self, path: str) -> bool:
        with self._lock:
            try:
                with map_ssh_errors(f"{self.name}:{path}"):
                    mode = self._sftp_client().stat(path).st_mode or 0
                    return statmod.S_ISREG(mode) or statmod.S_ISDIR(mode)
            except CollectorError as exc:
                if isinstance(exc, StreamClosed):
                    raise
                return False

    def _sftp_client(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            raise StreamClosed(f"{self.name}: not connected")
        return self._sftp
