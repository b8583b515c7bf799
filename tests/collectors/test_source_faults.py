"""Every source on its own, on this machine and over a real sshd: a client log that is a symlink loop and
output globs that match a directory or a loop are set aside with their error in the source's health,
while the host stays up (no reconnect) and its server log keeps flowing. Before, one such file put
the whole host into a reconnect loop. A path the glob no longer
matches leaves the followed set."""

from __future__ import annotations

import shutil
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
    (tmp_path / "loop").symlink_to(tmp_path / "loop")  # ELOOP on every open
    for name in ("good", "dir", "loop", "gone"):
        (tmp_path / "out" / name).mkdir(parents=True)
    append(tmp_path / "out" / "good" / "raw.jsonl", numbered(1, 5))
    append(tmp_path / "out" / "gone" / "raw.jsonl", numbered(1, 3))
    (tmp_path / "out" / "dir" / "raw.jsonl").mkdir()  # EISDIR on read
    (tmp_path / "out" / "loop" / "raw.jsonl").symlink_to(tmp_path / "out" / "loop" / "raw.jsonl")
    append(tmp_path / "server.log", numbered(1, 10))
    sources = [SourceSpec("server_log", str(tmp_path / "server.log")),
               SourceSpec("client_log", str(tmp_path / "loop")),
               SourceSpec("outputs", str(tmp_path / "out" / "*" / "raw.jsonl"))]
    sink = SqliteSink(tmp_path / "store.db")
    follower = HostFollower("h", connect, sources, sink, HostOptions(poll_interval=0.1, glob_interval=0.5),
                            Backoff(base=0.1, cap=0.5)).start()
    try:
        yield follower, sink
    finally:
        follower.stop()


def test_unreadable_sources_are_set_aside_and_the_server_log_flows(
    followed: tuple[HostFollower, SqliteSink], tmp_path: Path
) -> None:
    follower, sink = followed
    wait_for(lambda: len(sink.seqs()) == 10 and len(sink.texts("outputs")) == 8, what="the readable files")
    append(tmp_path / "server.log", numbered(11, 30))
    wait_for(lambda: len(sink.seqs()) == 30, what="the server log to keep flowing")
    assert sink.seqs() == list(range(1, 31)) and sink.dups() == 0
    health = follower.health
    assert health.state == "up" and health.reconnects == 0
    errors = {key: source.error for key, source in health.sources.items()}
    assert errors["server_log"] is None and errors["outputs:good"] is None
    assert errors["outputs:dir"]  # EISDIR here, SFTP "Failure" over ssh
    # A symlink loop: ELOOP here; over ssh the batched stat finds nothing there, like a file not created yet.
    assert sink.texts("client_log") == []
    if isinstance(follower.tails[("client_log", str(tmp_path / "loop"))].transport, LocalTransport):
        assert "symbolic links" in str(errors["client_log"]) and errors["outputs:loop"]


def test_a_vanished_path_leaves_the_followed_set(followed: tuple[HostFollower, SqliteSink], tmp_path: Path) -> None:
    follower, sink = followed
    gone = ("outputs", str(tmp_path / "out" / "gone" / "raw.jsonl"))
    wait_for(lambda: gone in follower.tails and len(sink.texts("outputs")) == 8, what="the outputs")
    shutil.rmtree(tmp_path / "out" / "gone")
    wait_for(lambda: gone not in follower.tails, what="the vanished path to be dropped")
    append(tmp_path / "out" / "good" / "raw.jsonl", numbered(6, 9))
    wait_for(lambda: len(sink.texts("outputs")) == 12, what="the remaining output file")
    assert follower.health.reconnects == 0


def test_a_source_that_becomes_readable_flows_and_its_error_clears(
    followed: tuple[HostFollower, SqliteSink], tmp_path: Path
) -> None:
    follower, sink = followed
    wait_for(lambda: len(sink.seqs()) == 10, what="the server log")
    (tmp_path / "loop").unlink()
    append(tmp_path / "loop", numbered(1, 4))  # now a plain client log
    wait_for(lambda: len(sink.texts("client_log")) == 4, what="the repaired client log")
    assert follower.health.sources["client_log"].error is None and follower.health.reconnects == 0
