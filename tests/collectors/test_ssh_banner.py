"""A host whose login shell prints a banner on every session (here `BASH_ENV` that echoes, as an `echo`
in ~/.bashrc does), in a zone other than UTC: every command's answer, stream and catch-up read is the
command's own (the banner is skipped by a marker line), the clock probe reads the zone, and every line
is stored at its UTC instant. With the banner also reaching an external sftp-server, connecting fails
with a sentence that says so instead of paramiko's "Garbage packet received"."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.runner import build_services
from kvwatch.collectors.base import ConnectFailed
from tests.app.slice_helpers import wait_until
from tests.fixtures.sshd import SSHD, Sshd, own_sshd, require_component

pytestmark = pytest.mark.sshd
BANNER = "echo 'Welcome to gpu-node-07 (Ubuntu 22.04)'; echo '*** scheduled maintenance 2026-12-24 ***'\n"
UTC8 = dt.timezone(dt.timedelta(hours=8))
DECODE = ("[{stamp} TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.50, cuda graph: True, "
          "gen throughput (token/s): 900.00, #queue-req: 0\n")


def _chatty_sshd(sftp: str) -> contextlib.AbstractContextManager[Sshd]:
    require_component("OpenSSH server (/usr/sbin/sshd)", os.path.exists(SSHD))
    d = Path(tempfile.mkdtemp(prefix="kvwatch-sshd-banner-"))
    (d / "banner.sh").write_text(BANNER)
    return own_sshd(d, env={"TZ": "Asia/Shanghai", "BASH_ENV": str(d / "banner.sh")}, sftp=sftp)


@pytest.fixture(scope="module")
def chatty() -> Iterator[Sshd]:
    with _chatty_sshd("internal-sftp") as server:
        yield server


def test_answers_and_streams_are_the_commands_own(chatty: Sshd, tmp_path: Path) -> None:
    data = tmp_path / "data.log"
    data.write_bytes(b"".join(b"line %d\n" % n for n in range(20000)))
    transport = chatty.connect()
    try:
        assert transport.run(["echo", "hi"]).stdout == b"hi\n"
        assert "Welcome to gpu-node-07" in transport.banner
        stream = transport.open_stream(["cat", str(data)])
        got = b""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            chunk = stream.read(1.0)
            if chunk == b"":
                break
            got += chunk or b""
        stream.close()
        assert got == data.read_bytes()
    finally:
        transport.close()


def test_a_utc_plus_8_host_with_a_banner_stores_every_line(chatty: Sshd, tmp_path: Path) -> None:
    now = float(int(time.time()))
    history = [now - 300 + 2 * i for i in range(138)]
    log = tmp_path / "server.log"
    with log.open("w") as handle:
        for i, t in enumerate(history):
            handle.write(DECODE.format(stamp=dt.datetime.fromtimestamp(t, UTC8).strftime("%Y-%m-%d %H:%M:%S"),
                                       n=i + 1))
    os.utime(log, (history[-1], history[-1]))
    host = HostConfig(name="gpu1", ssh=chatty.spec, identity_file=chatty.key_path,
                      known_hosts=chatty.known_hosts_path, server_log=str(log))
    services = build_services(Config(server=ServerConfig(data_dir=str(tmp_path)), hosts=(host,)))
    services.collectors["gpu1"].interval = 0.05
    services.start_collectors()
    try:
        wait_until(lambda: len(services.store.series("gpu1", "running_req")[0]) == 138, timeout=30)
        t, v = services.store.series("gpu1", "running_req")
        assert t.tolist() == history and v.tolist() == [float(n) for n in range(1, 139)]
        health = services.collectors["gpu1"].health.as_dict()
        assert (health["utc_offset_s"], health["timezone"], health["clock"]) == (28800, "Asia/Shanghai", "read")
        assert health["state"] == "up"
    finally:
        services.stop()


def test_a_banner_that_reaches_sftp_is_named() -> None:
    with _chatty_sshd("/usr/lib/openssh/sftp-server") as server, \
            pytest.raises(ConnectFailed, match=r"prints text on non-interactive sessions .* breaks SFTP"):
        server.connect()
