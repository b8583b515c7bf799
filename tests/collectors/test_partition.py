"""A network partition (link down between kvwatch and the host, packets dropped silently): noticed
within seconds, not after TCP's minutes of retransmission; after the link heals, every line
written meanwhile is stored exactly once."""

from __future__ import annotations

import time

from kvwatch.collectors.backoff import Backoff
from kvwatch.collectors.host import HostFollower, HostOptions, SourceSpec
from kvwatch.collectors.ssh.transport import SshOptions, SshTransport
from tests.collectors.sinks import SqliteSink
from tests.collectors.test_host import Writer, wait_for
from tests.fixtures.netns import NetnsHost, netns_host
from tests.fixtures.sshd import Sshd

__all__ = ["netns_host"]


def test_partition_is_noticed_and_survived(netns_host: tuple[NetnsHost, Sshd]) -> None:
    host, sshd = netns_host
    opts = SshOptions(connect_timeout=3, io_timeout=3, tcp_user_timeout_ms=3000,
                      socket_factory=host.socket_factory)
    target = sshd.target()
    log = sshd.dir / "server.log"
    log.touch()
    sink = SqliteSink(sshd.dir / "store.db")
    follower = HostFollower("gpu1", lambda: SshTransport(target, opts).connect(),
                            [SourceSpec("server_log", str(log))], sink,
                            HostOptions(poll_interval=0.5), Backoff(base=0.2, cap=1.0)).start()
    try:
        with Writer(log, interval=0.02) as writer:
            wait_for(lambda: len(sink.texts()) > 50, what="first lines")
            host.partition()
            cut = time.monotonic()
            try:
                wait_for(lambda: follower.health.reconnects >= 1, timeout=30, what="partition noticed")
                noticed = time.monotonic() - cut
                time.sleep(2)  # writes go on while the host is unreachable
            finally:
                host.heal()
            wait_for(lambda: follower.health.state == "up", timeout=30, what="reconnect after heal")
            time.sleep(0.5)
        wait_for(lambda: len(sink.texts()) >= writer.written, what="all lines")
    finally:
        follower.stop()
    assert noticed < 3 + 0.5 + 2  # io_timeout + poll interval, plus scheduling slack on a busy box
    assert sink.seqs() == list(range(1, writer.written + 1))
    assert sink.dups() == 0
