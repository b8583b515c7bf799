"""Group commit (app/store/group_commit.py): threads that commit while the writer is busy share one
transaction, each returns once its batch is stored, and a failing batch fails only its own caller."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kvwatch.app.store import open_store
from kvwatch.app.store.base import Batch, Sample
from kvwatch.app.store.group_commit import GroupCommit

T = 1_800_000_000.0


def batch(host: str, v: float = 1.0) -> Batch:
    b = Batch(host, "server_log", "/log")
    b.samples.append(Sample("running_req", "", T, v))
    return b


class Recorder:
    """A transaction that records what it committed; a batch of host 'bad' fails its write."""

    def __init__(self) -> None:
        self.transactions: list[list[str]] = []
        self._open: list[str] = []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._open = []
        yield
        self.transactions.append(self._open)

    def write(self, b: Batch) -> None:
        if b.host == "bad":
            raise ValueError("bad batch")
        self._open.append(b.host)


def commit_while_busy(hosts: list[str]) -> tuple[Recorder, dict[str, BaseException | None]]:
    writer, recorder = threading.RLock(), Recorder()
    group = GroupCommit(writer, recorder.transaction, recorder.write)
    outcome: dict[str, BaseException | None] = {}

    def commit(host: str) -> None:
        try:
            group.commit(batch(host))
            outcome[host] = None
        except ValueError as exc:
            outcome[host] = exc

    def wait_for(condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 10
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert condition()

    threads = [threading.Thread(target=commit, args=(h,)) for h in hosts]
    with writer:  # the writer is busy: the first caller leads and waits for it, the others queue
        threads[0].start()
        wait_for(lambda: group._leading and not group._queue)
        for thread in threads[1:]:
            thread.start()
        wait_for(lambda: len(group._queue) == len(hosts) - 1)
    for thread in threads:
        thread.join(10)
    return recorder, outcome


def test_commits_queued_behind_a_busy_writer_share_one_transaction() -> None:
    hosts = [f"h{i}" for i in range(6)]
    recorder, outcome = commit_while_busy(hosts)
    assert outcome == {h: None for h in hosts}
    # the leader's own batch, then everything queued while it waited, in one transaction
    assert recorder.transactions[0] == ["h0"]
    assert len(recorder.transactions) == 2 and sorted(recorder.transactions[1]) == hosts[1:]


def test_a_failing_batch_fails_its_own_caller_and_the_others_are_stored_one_by_one() -> None:
    recorder, outcome = commit_while_busy(["h0", "h1", "bad", "h2"])
    assert isinstance(outcome["bad"], ValueError) and [outcome[h] for h in ("h0", "h1", "h2")] == [None] * 3
    assert recorder.transactions[0] == ["h0"]
    assert sorted(h for t in recorder.transactions[1:] for h in t) == ["h1", "h2"]
    assert len(recorder.transactions) == 3  # the failed group's two good batches, one transaction each


def test_many_threads_committing_to_sqlite_store_every_batch(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "k.db"))
    hosts = [f"h{i}" for i in range(16)]

    def commit_many(host: str) -> None:
        for n in range(50):
            b = batch(host, float(n))
            b.samples[0] = Sample("running_req", "", T + n, float(n))
            b.state = {"offset": n}
            store.commit(b)

    threads = [threading.Thread(target=commit_many, args=(h,)) for h in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for host in hosts:
        stamps, v = store.series(host, "running_req")
        assert list(stamps) == [T + n for n in range(50)]
        assert list(v) == [float(n) for n in range(50)]
        assert store.load_state(host, "server_log", "/log") == {"offset": 49}
    store.close()


def test_a_bad_batch_in_the_sqlite_store_raises_and_leaves_the_store_usable(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "k.db"))
    bad = batch("h0")
    bad.samples[0] = Sample("running_req", "", T, "not a number")  # type: ignore[arg-type]
    bad.state = {"offset": object()}  # not JSON: the write fails
    with pytest.raises(TypeError):
        store.commit(bad)
    store.commit(batch("h0", 2.0))
    assert list(store.series("h0", "running_req")[1]) == [2.0]
    store.close()
