"""A connection that drops during authentication is a lost connection, not a refused key.

paramiko reports both as AuthenticationException. Under load, sshd closes connections during login
(MaxStartups, LoginGraceTime): the soak's host waited out the one-minute refusal backoff for it, and
missed two log rotations meanwhile. The server here is paramiko's own server side, which closes the
socket when the client offers its key: the client's error is the one a real drop gives."""

from __future__ import annotations

import inspect
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest

from kvwatch.collectors.backoff import Backoff
from kvwatch.collectors.base import AuthFailed, ConnectFailed
from kvwatch.collectors.ssh.errors import DROPPED_DURING_AUTH
from kvwatch.collectors.ssh.target import SshTarget
from kvwatch.collectors.ssh.transport import SshTransport
from tests.fixtures.sshd import keygen


class CloseOnAuth(paramiko.ServerInterface):
    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        self.conn.shutdown(socket.SHUT_RDWR)  # what sshd does when LoginGraceTime runs out
        return paramiko.AUTH_FAILED


@pytest.fixture
def dropping_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    host_key = paramiko.ECDSAKey.generate()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_key.get_name()} {host_key.get_base64()}\n")
    served: list[paramiko.Transport] = []

    def serve() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        server = paramiko.Transport(conn)
        server.add_server_key(host_key)
        served.append(server)
        server.start_server(server=CloseOnAuth(conn))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port, known_hosts
    listener.close()
    for server in served:
        server.close()


def test_connection_dropped_during_auth_is_retried_soon(dropping_server: tuple[int, Path], tmp_path: Path) -> None:
    port, known_hosts = dropping_server
    keygen(tmp_path / "client")
    target = SshTarget.parse(
        f"kv@127.0.0.1:{port}", identity_file=str(tmp_path / "client"), known_hosts=str(known_hosts), ssh_config=None
    )
    with pytest.raises(ConnectFailed, match="connection lost during authentication") as raised:
        SshTransport(target).connect()
    assert not isinstance(raised.value, AuthFailed)
    delay = Backoff().next_delay(raised.value)
    assert delay is not None and delay < Backoff().auth_min


def test_the_texts_are_paramikos() -> None:
    """The texts this project reads as a drop are the ones the installed paramiko raises."""
    source = inspect.getsource(paramiko.auth_handler)
    for text in DROPPED_DURING_AUTH:
        assert f'"{text}"' in source or f"'{text}'" in source, text
