"""A backlog stored in bulk (columns, chunk rows) answers exactly as the same lines stored one by one.

Two hosts in one store get the same DP-attention log: `live` in small deliveries (the per-line
path), `bulk` with its first part in one backlog delivery (columnar parse, ranks combined in
arrays, one chunk row per series) and the rest live. Every series, rank, rollup bucket, event and
latest value must agree; the backlog's batch commits with its offset or not at all.
"""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from kvwatch.app.bus import EventBus
from kvwatch.app.pipeline import columns
from kvwatch.app.pipeline.sink import StoreSink
from kvwatch.app.store import Store
from kvwatch.app.store import chunks as chunk_module
from kvwatch.app.store.rollup import ROLLUP_WIDTHS
from kvwatch.collectors.base import Line
from kvwatch.collectors.lines import TailState

START = 1771930154  # 2026-02-24T10:49:14Z
PATH = "/logs/server.log"


def dp_log(steps: int, seed: int = 5, start: int = START) -> list[str]:
    """SGLang lines of a 4-rank DP-attention run: decode per rank (with speculative acceptance),
    a prefill, an access line; DP3 falls silent for a minute; one retraction event."""
    rng = random.Random(seed)
    out: list[str] = []
    for step in range(steps):
        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start + step * 13 // 10))
        for rank in range(4):
            if rank == 3 and 1000 <= step < 1050:
                continue
            out.append(f"[{ts} DP{rank} TP{rank}] Decode batch, #running-req: {rng.randint(1, 150)}, "
                       f"#token: {rng.randint(1000, 376000)}, token usage: {rng.random():.2f}, "
                       f"accept len: {rng.uniform(1, 4):.2f}, cuda graph: {rng.random() < 0.9}, "
                       f"gen throughput (token/s): {rng.uniform(100, 1500):.2f}, #queue-req: {rng.randint(0, 99)}, ")
        out.append(f"[{ts} DP1 TP1] Prefill batch, #new-seq: {rng.randint(1, 8)}, #new-token: {rng.randint(1, 8192)}, "
                   f"#cached-token: {rng.randint(0, 8192)}, token usage: {rng.random():.2f}, "
                   f"#running-req: {rng.randint(1, 150)}, #queue-req: {rng.randint(0, 99)}, ")
        if step == 1500:
            out.append(f"[{ts} DP0 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3")
        out.append(f'[{ts}] INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
    return out


def as_lines(texts: list[str]) -> list[Line]:
    lines, offset = [], 0
    for number, text in enumerate(texts, 1):
        offset += len(text.encode()) + 1
        lines.append(Line("server_log", 1, offset, number, text))
    return lines


def deliver(store: Store, host: str, lines: list[Line], pieces: list[int], zone: str = "UTC") -> None:
    sink = StoreSink(host, store, EventBus(), timezone=zone)
    sink.load_state(host, "server_log", PATH)
    start = 0
    for size in pieces:
        part = lines[start:start + size]
        state = TailState(generation=1, offset=part[-1].offset, line_no=part[-1].line_no)
        sink.deliver(host, "server_log", PATH, part, state)
        start += size
    sink.idle(host, "server_log", PATH)


def by_time(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Samples of one time in value order: SQL orders by time only."""
    order = np.lexsort((v, t))
    return t[order], v[order]


@pytest.fixture
def both(store: Store, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setattr(columns, "PARSE_SLICE", 3000)  # the backlog is parsed in three slices
    lines = as_lines(dp_log(2400))
    assert len(lines) > 2 * columns.BULK_LINES
    deliver(store, "live", lines, [100] * (len(lines) // 100 + 1))
    backlog = 2 * columns.BULK_LINES + 17
    deliver(store, "bulk", lines, [backlog] + [100] * ((len(lines) - backlog) // 100 + 1))
    return store


def test_every_series_and_rank_agrees(both: Store) -> None:
    catalog = both.catalog("live")
    assert catalog == both.catalog("bulk")
    assert ("accept_len", "") in catalog and ("token_usage", "DP3") in catalog
    for metric, rank in catalog:
        t_live, v_live = by_time(*both.series("live", metric, rank))
        t_bulk, v_bulk = by_time(*both.series("bulk", metric, rank))
        assert len(t_live) > 100, (metric, rank)
        np.testing.assert_array_equal(t_bulk, t_live, err_msg=f"{metric} {rank}")
        np.testing.assert_allclose(v_bulk, v_live, rtol=1e-9, err_msg=f"{metric} {rank}")
        assert both.latest("bulk", metric, rank) == pytest.approx(both.latest("live", metric, rank))
        assert both.raw_start("bulk", metric, rank) == both.raw_start("live", metric, rank)


def test_rollups_agree_at_every_width(both: Store) -> None:
    for metric, rank in (("gen_throughput", ""), ("token_usage", ""), ("running_req", "DP2"), ("new_token", "DP1")):
        for width in ROLLUP_WIDTHS:
            live = both.buckets("live", metric, width, rank)
            bulk = both.buckets("bulk", metric, width, rank)
            assert len(live) > 5
            np.testing.assert_allclose(bulk, live, rtol=1e-9, err_msg=f"{metric} {rank} {width}")
            bulk_points, live_points = (both.rollup(host, metric, width, rank) for host in ("bulk", "live"))
            np.testing.assert_allclose(bulk_points, live_points)


def test_rollup_windows_cut_across_chunks_agree(both: Store) -> None:
    """Windows whose edges fall inside a chunk's buckets and on the backlog's last bucket, which its
    chunk and the first live rows share."""
    t, _ = both.series("live", "gen_throughput")
    for since, until in ((None, float(t[len(t) // 2])), (float(t[len(t) // 3]), None),
                         (float(t[100]) + 3.5, float(t[-200]) - 7.25), (float(t[0]) - 1000, float(t[0]) - 10)):
        for width in ROLLUP_WIDTHS:
            live = both.buckets("live", "gen_throughput", width, "", since, until)
            np.testing.assert_allclose(both.buckets("bulk", "gen_throughput", width, "", since, until), live)
            points = [both.rollup(h, "gen_throughput", width, "DP0", since, until) for h in ("bulk", "live")]
            np.testing.assert_allclose(points[0], points[1], err_msg=f"{since} {until} {width}")
    assert both.extent("bulk", "gen_throughput", "DP0") == both.extent("live", "gen_throughput", "DP0")


def test_events_and_the_silent_rank_agree(both: Store) -> None:
    strip = [{k: v for k, v in e.items() if k != "host"} for e in both.events("live")]
    assert [e["kind"] for e in strip].count("event") == 1
    assert strip == [{k: v for k, v in e.items() if k != "host"} for e in both.events("bulk")]
    # while DP3 is silent past its limit the host's running_req is the sum of three ranks only
    t, v = both.series("bulk", "running_req")
    gap = (t > START + 1020 * 13 // 10) & (t < START + 1045 * 13 // 10)
    parts = [dict(zip(*both.series("bulk", "running_req", f"DP{r}"), strict=True)) for r in range(3)]
    moments = np.unique(t[gap])
    assert len(moments) > 10
    for x in moments[-3:]:  # the last host sample of a moment is the sum over the three live ranks
        three = sum(p[x] for p in parts)
        assert three in v[t == x].tolist()
        assert three + both.series("bulk", "running_req", "DP3", until=x)[1][-1] not in v[t == x].tolist()


def test_a_failed_backlog_commit_stores_nothing_and_a_retry_stores_it_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = as_lines(dp_log(1200))
    assert len(lines) >= columns.BULK_LINES

    def refuse(*_: object) -> list[object]:
        raise RuntimeError("disk full")

    monkeypatch.setattr(chunk_module, "column_buckets", refuse)
    with pytest.raises(RuntimeError):
        deliver(store, "h", lines, [len(lines)])
    assert store.load_state("h", "server_log", PATH) is None
    assert store.catalog("h") == [] and len(store.series("h", "running_req", "DP0")[0]) == 0
    monkeypatch.undo()
    deliver(store, "h", lines, [len(lines)])
    assert store.load_state("h", "server_log", PATH) == TailState(
        generation=1, offset=lines[-1].offset, line_no=lines[-1].line_no).as_dict()
    decode_dp0 = sum(1 for text in dp_log(1200) if "DP0 TP0] Decode" in text)
    assert len(store.series("h", "running_req", "DP0")[0]) == decode_dp0


def test_prune_trims_chunks_at_the_cut_and_keeps_rollups(both: Store) -> None:
    t, _ = both.series("bulk", "gen_throughput", "DP0")
    cut = float(t[len(t) // 3])
    before = int((t < cut).sum())
    assert both.prune_series("bulk", "gen_throughput", "DP0", cut) == before
    left, _ = both.series("bulk", "gen_throughput", "DP0")
    assert float(left[0]) >= cut and len(left) == len(t) - before
    assert both.raw_start("bulk", "gen_throughput", "DP0") == float(left[0])
    extent = both.extent("bulk", "gen_throughput", "DP0")
    assert extent is not None and extent[0] < cut  # the rollups still remember the pruned part


def test_naive_stamps_across_a_dst_change_agree(store: Store) -> None:
    """New York's clocks jump from 02:00 to 03:00 on 2026-03-08: the bulk path converts wall stamps
    an hour at a time, and stamp by stamp in an hour where the offset changes."""
    lines = as_lines(dp_log(2000, start=1772933400))  # 2026-03-08 01:30 as wall time, read as UTC
    deliver(store, "live", lines, [100] * (len(lines) // 100 + 1), zone="America/New_York")
    deliver(store, "bulk", lines, [len(lines)], zone="America/New_York")
    t_live, v_live = by_time(*store.series("live", "running_req", "DP0"))
    t_bulk, v_bulk = by_time(*store.series("bulk", "running_req", "DP0"))
    assert len(t_live) > 1000
    np.testing.assert_array_equal(t_bulk, t_live)
    np.testing.assert_array_equal(v_bulk, v_live)


def hybrid_log(steps: int, seed: int = 11) -> list[str]:
    """A 2-rank DP run of a sliding-window model (gpt-oss, MiMo): per-pool counts, no `token usage`."""
    rng = random.Random(seed)
    out: list[str] = []
    for step in range(steps):
        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(START + step))
        for rank in range(2):
            full, swa = rng.random(), rng.random()
            out.append(f"[{ts} DP{rank} TP{rank} EP{rank}] Decode batch, #running-req: {rng.randint(1, 90)}, "
                       f"#full token: {int(full * 250000)}, full token usage: {full:.2f}, "
                       f"#swa token: {int(swa * 990000)}, swa token usage: {swa:.2f}, cuda graph: True, "
                       f"gen throughput (token/s): {rng.uniform(100, 1500):.2f}, #queue-req: {rng.randint(0, 40)}")
    return out


def test_a_hybrid_models_usage_is_the_fullest_pool_on_both_paths(store: Store) -> None:
    texts = hybrid_log(columns.BULK_LINES)
    lines = as_lines(texts)
    deliver(store, "live", lines, [100] * (len(lines) // 100 + 1))
    deliver(store, "bulk", lines, [len(lines)])
    last = texts[-1]  # DP1's last line
    full = float(last.split("full token usage: ")[1].split(",")[0])
    swa = float(last.split("swa token usage: ")[1].split(",")[0])
    for host in ("live", "bulk"):
        assert store.latest(host, "token_usage", "DP1")[1] == pytest.approx(max(full, swa)), host
        assert ("token", "DP0") in store.catalog(host) and ("swa_token_usage", "") in store.catalog(host)
    t_live, v_live = by_time(*store.series("live", "token_usage"))
    t_bulk, v_bulk = by_time(*store.series("bulk", "token_usage"))
    np.testing.assert_array_equal(t_bulk, t_live)
    np.testing.assert_allclose(v_bulk, v_live)
    assert v_live.max() > 0.95  # what the usage alert reads: a full sliding-window pool shows
