"""The Store contract, the same tests for SQLite and PostgreSQL."""

from __future__ import annotations

import numpy as np
import pytest

from kvwatch.app.store import Batch, EventRow, Sample, Store, open_store
from kvwatch.app.store.rollup import ROLLUP_WIDTHS
from kvwatch.app.store.schema import LATEST_VERSION


def batch(samples: list[Sample], events: list[EventRow] | None = None, offset: int = 0) -> Batch:
    return Batch("gpu1", "server_log", "/logs/server.log", samples=samples, events=events or [],
                 state={"offset": offset, "generation": 1})


def test_commit_writes_samples_events_and_state_together(store: Store) -> None:
    store.commit(batch([Sample("token_usage", "", 100.0, 0.5), Sample("token_usage", "DP1", 100.0, 0.7)],
                       [EventRow("event", 100.0, 3, {"event": "ready"})], offset=42))
    t, v = store.series("gpu1", "token_usage")
    assert t.tolist() == [100.0]
    assert v.tolist() == [0.5]
    assert store.series("gpu1", "token_usage", rank="DP1")[1].tolist() == [0.7]
    assert store.load_state("gpu1", "server_log", "/logs/server.log") == {"offset": 42, "generation": 1}
    [event] = store.events("gpu1")
    assert (event["kind"], event["event"], event["line"]) == ("event", "ready", 3)
    assert event["source"] == "server_log"
    assert store.ranks("gpu1", "token_usage") == ["", "DP1"]


def test_state_is_replaced_and_other_hosts_stay_apart(store: Store) -> None:
    store.commit(batch([Sample("running_req", "", 1.0, 3.0)], offset=10))
    store.commit(batch([Sample("running_req", "", 2.0, 4.0)], offset=20))
    store.commit(Batch("gpu2", "server_log", "/logs/server.log", [Sample("running_req", "", 1.5, 9.0)]))
    assert store.load_state("gpu1", "server_log", "/logs/server.log") == {"offset": 20, "generation": 1}
    assert store.load_state("gpu2", "server_log", "/logs/server.log") is None
    assert store.series("gpu1", "running_req")[1].tolist() == [3.0, 4.0]
    assert store.metrics("gpu2") == ["running_req"]


def test_failed_commit_leaves_nothing_behind(store: Store) -> None:
    bad = batch([Sample("token", "", 1.0, 5.0)], offset=99)
    bad.events.append(EventRow("event", 1.0, 1, {"unserialisable": object()}))
    with pytest.raises(TypeError):
        store.commit(bad)
    assert len(store.series("gpu1", "token")[0]) == 0
    assert store.load_state("gpu1", "server_log", "/logs/server.log") is None
    assert store.rollup("gpu1", "token", ROLLUP_WIDTHS[0])[0].tolist() == []


def test_series_window_is_since_exclusive_until_inclusive(store: Store) -> None:
    store.commit(batch([Sample("token", "", float(t), float(t * 10)) for t in range(10)]))
    t, v = store.series("gpu1", "token", since=3.0, until=6.0)
    assert t.tolist() == [4.0, 5.0, 6.0]
    assert v.tolist() == [40.0, 50.0, 60.0]
    assert store.extent("gpu1", "token") == (0.0, 9.0)
    assert store.latest("gpu1", "token") == (9.0, 90.0)
    assert store.latest("gpu1", "nothing") is None
    assert store.extent("gpu1", "nothing") is None


def test_rollup_keeps_each_buckets_extremes_at_their_times(store: Store) -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(size=1800)
    # Two batches, the second one out of order: buckets merge whatever the arrival order.
    samples = [Sample("gen_throughput", "", 1000.0 + i, float(x)) for i, x in enumerate(values)]
    store.commit(batch(samples[900:]))
    store.commit(batch(samples[:900]))
    t, v = store.rollup("gpu1", "gen_throughput", 60)
    assert np.all(np.diff(t) > 0)
    times = 1000.0 + np.arange(1800)
    buckets = np.floor(times / 60) * 60
    for bucket in np.unique(buckets):
        inside = buckets == bucket
        got = v[(t >= bucket) & (t < bucket + 60)]
        assert sorted(got.tolist()) == [values[inside].min(), values[inside].max()]
    assert v.max() == values.max()
    assert v.min() == values.min()
    assert t[np.argmax(v)] == 1000.0 + int(np.argmax(values))
    # Every returned point is a real sample.
    lookup = dict(zip((1000.0 + np.arange(1800)).tolist(), values.tolist(), strict=True))
    assert all(lookup[ti] == vi for ti, vi in zip(t.tolist(), v.tolist(), strict=True))


def test_rollup_window_and_prune_keep_old_windows_drawable(store: Store) -> None:
    store.commit(batch([Sample("queue_req", "", float(t), float(t % 7)) for t in range(0, 3600)]))
    t, _ = store.rollup("gpu1", "queue_req", 600, since=1000.0, until=2000.0)
    assert t.min() > 1000.0
    assert t.max() <= 2000.0
    assert store.prune(before=1800.0) == 1800
    assert store.series("gpu1", "queue_req")[0].min() == 1800.0
    assert store.rollup("gpu1", "queue_req", 600)[0].min() < 600.0
    assert store.extent("gpu1", "queue_req") == (0.0, 3599.0)


def test_documents_by_kind_and_host_in_time_order(store: Store) -> None:
    store.put_document("run", "r2", "gpu1", 20.0, {"flags": {"tp": 8}})
    store.put_document("run", "r1", "gpu1", 10.0, {"flags": {}})
    store.put_document("run", "r3", "gpu2", 5.0, {})
    store.put_document("run", "r1", "gpu1", 11.0, {"flags": {"tp": 4}})
    docs = store.documents("run", host="gpu1")
    assert [d["key"] for d in docs] == ["r1", "r2"]
    assert docs[0]["data"] == {"flags": {"tp": 4}}
    assert docs[0]["t"] == 11.0
    assert len(store.documents("run")) == 3
    assert store.documents("alert") == []


def test_reopening_keeps_data_and_schema_version(store_url: str) -> None:
    first = open_store(store_url)
    first.commit(batch([Sample("token", "", 1.0, 2.0)], offset=5))
    first.close()
    again = open_store(store_url)
    try:
        assert again.series("gpu1", "token")[1].tolist() == [2.0]
        assert again.schema_version() == LATEST_VERSION  # type: ignore[attr-defined]
    finally:
        again.close()
