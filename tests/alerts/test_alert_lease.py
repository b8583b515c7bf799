"""The alerts lease on a real store (SQLite file and a temp PostgreSQL cluster): one holder, taken
over when released, stale, or held by a process of this machine that is gone; one winner in a race."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from kvwatch.app.alerts.lease import ALERTS_LEASE, BEAT_S, LEASE_DOC, STALE_AFTER_S, Lease
from kvwatch.app.store import Store, open_store


@pytest.fixture
def stores(store_url: str) -> Iterator[list[Store]]:
    """Two connections to one database: two web apps."""
    opened = [open_store(store_url), open_store(store_url)]
    yield opened
    for store in opened:
        store.close()


def held_by(store: Store, owner: str, age_s: float) -> None:
    """The lease as another process left it, last renewed `age_s` ago."""
    data = {"owner": owner, "since": time.time() - 100}
    store.put_document(LEASE_DOC, ALERTS_LEASE, "", time.time() - age_s, data)


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_one_holder_until_it_releases(stores: list[Store]) -> None:
    first, second = Lease(stores[0]), Lease(stores[1])
    assert first.beat() and first.held
    assert not second.beat() and not second.held
    assert first.beat(), "the holder renews"
    assert second.holder() == first.owner
    first.release()
    assert not first.held
    assert second.beat() and second.held, "a released lease is taken at the next look"
    assert not first.beat()


def test_a_lease_from_another_machine_is_taken_over_once_stale(stores: list[Store]) -> None:
    held_by(stores[0], "gpu-box-7:4242:abc", age_s=STALE_AFTER_S - 1.5)
    lease = Lease(stores[1])
    assert not lease.beat(), "renewed 4.5 s ago: still its holder's"
    held_by(stores[0], "gpu-box-7:4242:abc", age_s=STALE_AFTER_S + 0.1)
    assert lease.beat() and lease.holder() == lease.owner


def test_a_lease_of_a_dead_process_on_this_machine_is_taken_at_once(stores: list[Store]) -> None:
    held_by(stores[0], f"{socket.gethostname()}:{dead_pid()}:abc", age_s=0.0)
    lease = Lease(stores[1])
    assert lease.beat() and lease.held


def test_a_holder_that_was_taken_over_stops_holding(stores: list[Store]) -> None:
    stalled, other = Lease(stores[0]), Lease(stores[1])
    assert stalled.beat()
    # It stalls (a long GC pause, SIGSTOP) past the stale time: the other takes over.
    doc = stores[1].documents(LEASE_DOC)[0]
    stores[1].put_document(LEASE_DOC, ALERTS_LEASE, "", doc["t"] - STALE_AFTER_S - 1, doc["data"])
    assert other.beat()
    assert not stalled.beat() and not stalled.held
    assert other.beat() and other.held


def test_the_holder_stops_trusting_its_lease_before_anyone_may_take_it(stores: list[Store]) -> None:
    lease = Lease(stores[0], beat_s=0.2)
    assert lease.beat() and lease.held
    time.sleep(0.25)  # one beat missed: still held
    assert lease.held
    time.sleep(0.2)  # two missed (stale after three): no longer trusted, so nothing is sent
    assert not lease.held
    assert lease.beat() and lease.held, "nobody took it meanwhile: renewed"


def test_of_several_racing_for_a_stale_lease_exactly_one_wins(store_url: str) -> None:
    held_by_store = open_store(store_url)
    held_by(held_by_store, "gpu-box-7:4242:abc", age_s=STALE_AFTER_S + 1)
    contenders = [Lease(open_store(store_url)) for _ in range(6)]
    barrier = threading.Barrier(len(contenders))
    won: list[str] = []

    def race(lease: Lease) -> None:
        barrier.wait()
        if lease.beat():
            won.append(lease.owner)

    threads = [threading.Thread(target=race, args=(lease,)) for lease in contenders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(won) == 1
    assert Lease(held_by_store).holder() == won[0]
    for lease in contenders:
        lease.store.close()
    held_by_store.close()


def test_beat_and_stale_time_are_as_documented() -> None:
    assert (BEAT_S, STALE_AFTER_S) == (2.0, 6.0)
