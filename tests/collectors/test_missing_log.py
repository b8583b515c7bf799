"""Issue #22, finding 7: a deleted log is reported while it is missing, on this machine and over a real
sshd. The server and client logs' health (what /api/hosts serves and the page's source cards show)
says `missing` from the poll after the file went away, with when, and clears when it is back;
lines written to the new file are all read, and the other log keeps flowing meanwhile."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kvwatch.collectors.backoff import Backoff
from kvwatch.collectors.base import Transport
from kvwatch.collectors.host import HostFollower, HostOptions, SourceSpec
from kvwatch.collectors.local import LocalTransport
from tests.collectors.harness import append, numbered
from tests.collectors.sinks import SqliteSink
from tests.collectors.test_host import wait_for


@pytest.fixture
def followed(tmp_path: Path, connect: Callable[[], Transport]) -> Iterator[tuple[HostFollower, SqliteSink]]:
    append(tmp_path / "server.log", numbered(1, 5))
    append(tmp_path / "client.log", numbered(1, 3))
    sources = [SourceSpec("server_log", str(tmp_path / "server.log")),
               SourceSpec("client_log", str(tmp_path / "client.log"))]
    sink = SqliteSink(tmp_path / "store.db")
    follower = HostFollower("h", connect, sources, sink, HostOptions(poll_interval=0.1, glob_interval=0.5),
                            Backoff(base=0.1, cap=0.5)).start()
    try:
        yield follower, sink
    finally:
        follower.stop()


def shown(follower: HostFollower, key: str) -> dict[str, object]:
    return dict(follower.health.as_dict()["sources"].get(key, {}))


def test_a_deleted_log_is_reported_missing_until_it_is_back(
    followed: tuple[HostFollower, SqliteSink], tmp_path: Path
) -> None:
    follower, sink = followed
    wait_for(lambda: len(sink.seqs()) == 5 and len(sink.texts("client_log")) == 3, what="both logs read")
    assert shown(follower, "server_log")["missing"] is False
    deleted_at = time.time()
    (tmp_path / "server.log").unlink()
    wait_for(lambda: shown(follower, "server_log")["missing"] is True, what="the server log shown missing")
    since = shown(follower, "server_log")["missing_since"]
    assert isinstance(since, float) and deleted_at <= since <= time.time()
    assert shown(follower, "client_log")["missing"] is False
    append(tmp_path / "client.log", numbered(4, 6))  # the other log keeps flowing meanwhile
    wait_for(lambda: len(sink.texts("client_log")) == 6, what="the client log to keep flowing")
    time.sleep(0.5)  # several polls: it stays missing while it is
    assert shown(follower, "server_log")["missing"] is True
    append(tmp_path / "server.log", numbered(6, 9))
    wait_for(lambda: shown(follower, "server_log")["missing"] is False, what="the server log back")
    assert shown(follower, "server_log")["missing_since"] is None
    wait_for(lambda: len(sink.seqs()) == 9, what="the recreated file's lines")
    assert sink.seqs() == list(range(1, 10)) and sink.dups() == 0
    assert follower.health.state == "up" and follower.health.reconnects == 0


def test_a_log_not_created_yet_is_missing_from_the_start(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "store.db")
    sources = [SourceSpec("server_log", str(tmp_path / "later.log"))]
    follower = HostFollower("h", LocalTransport, sources, sink, HostOptions(poll_interval=0.1)).start()
    try:
        wait_for(lambda: shown(follower, "server_log").get("missing") is True, what="missing at start")
        append(tmp_path / "later.log", numbered(1, 2))
        wait_for(lambda: len(sink.seqs()) == 2, what="the file once created")
        assert shown(follower, "server_log")["missing"] is False
    finally:
        follower.stop()
