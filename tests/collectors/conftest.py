"""`transport` runs a test once on this machine's files and once over a real SSH connection: the tail
must behave identically on both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kvwatch.collectors.base import Transport
from kvwatch.collectors.local import LocalTransport
from tests.fixtures.sshd import Sshd


@pytest.fixture(params=["local", "ssh"])
def transport(request: pytest.FixtureRequest) -> Iterator[Transport]:
    if request.param == "local":
        yield LocalTransport()
        return
    server: Sshd = request.getfixturevalue("sshd")
    remote = server.connect()
    try:
        yield remote
    finally:
        remote.close()


@pytest.fixture(params=["local", "ssh"])
def connect(request: pytest.FixtureRequest) -> Callable[[], Transport]:
    """The same test on this machine and over the real sshd."""
    if request.param == "local":
        return LocalTransport
    server: Sshd = request.getfixturevalue("sshd")
    return server.connect
