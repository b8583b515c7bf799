"""The live path as one function (`live_rows`, app/pipeline/rows.py): literal records in, store rows out, the
host's memory in an explicit LiveState."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from kvwatch.app.pipeline.batches import BatchBuilder
from kvwatch.app.pipeline.bounds import HostBounds, Limits
from kvwatch.app.pipeline.rows import LiveState, Rows, live_rows
from kvwatch.app.store.base import EventRow, Sample
from kvwatch.collectors.sinks import ClockStepSuspected
from kvwatch.parsers import Record, create_parser

T = 1_767_225_601.0  # 2026-01-01T00:00:01 UTC, the records' stamp
STAMP = "2026-01-01T00:00:01"
NOW = T + 0.5  # when their lines were read


def _stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def decode(line: int, dp: int, running: int, usage: float, ts: str = STAMP) -> Record:
    return {"kind": "decode", "line": line, "ts": ts, "tags": {"DP": dp, "TP": dp},
            "running_req": running, "token_usage": usage}


def test_two_dp_ranks_at_one_instant_are_followed_once_by_the_host_value_combined_by_the_catalog() -> None:
    rows = live_rows([decode(1, 0, 10, 0.4), decode(2, 1, 30, 0.9)], LiveState(), "server_log", "/log", now=NOW)
    assert rows == Rows([
        Sample("running_req", "DP0", T, 10.0), Sample("token_usage", "DP0", T, 0.4),
        Sample("running_req", "DP1", T, 30.0), Sample("token_usage", "DP1", T, 0.9),
        # the catalog: running requests add up over the ranks, token usage is the fullest rank's;
        # no partial value (DP0 alone, 10 requests) is stored for the host at T
        Sample("running_req", "", T, 40.0), Sample("token_usage", "", T, 0.9),
    ], [])


def test_ranks_at_different_instants_each_give_the_host_a_value_at_their_own_time() -> None:
    later = "2026-01-01T00:00:02"
    rows = live_rows([decode(1, 0, 10, 0.4), decode(2, 1, 30, 0.9, later)], LiveState(), "server_log", "/log", now=NOW)
    assert rows.host_samples == [Sample("running_req", "", T, 10.0), Sample("token_usage", "", T, 0.4),
                                 Sample("running_req", "", T + 1, 40.0), Sample("token_usage", "", T + 1, 0.9)]


def test_the_eight_gpus_of_one_nvidia_smi_tick_give_one_host_value_per_series() -> None:
    parser = create_parser("nvidia-smi")
    lines = [f"2026/01/01 00:00:01.000, {g}, {90 + g}, 1000, 80000, 500.0, {60 + g}" for g in range(8)]
    records = [r for n, text in enumerate(lines) for r in parser.feed(n, text)]
    rows = live_rows(records, LiveState(), "gpu", "gpu", now=NOW)
    host = [(s.metric, s.v) for s in rows.host_samples]
    assert len(host) == len({metric for metric, _ in host})  # one value a series at that instant
    assert ("gpu_mem_used_mib_total", 8000.0) in host and ("gpu_temp_c_max", 67.0) in host
    assert len([s for s in rows.samples if s.rank]) == 8 * 5


def test_the_ranks_latest_values_carry_over_to_the_next_call_through_the_state() -> None:
    state = LiveState()
    live_rows([decode(1, 0, 10, 0.4), decode(2, 1, 30, 0.9)], state, "server_log", "/log", now=NOW)
    later = live_rows([decode(3, 0, 12, 0.5, "2026-01-01T00:00:02")], state, "server_log", "/log", now=NOW + 1)
    assert later.host_samples == [Sample("running_req", "", T + 1, 42.0), Sample("token_usage", "", T + 1, 0.9)]


def test_events_are_rows_of_their_own_and_unstamped_records_take_the_read_time() -> None:
    ready: Record = {"kind": "event", "event": "ready", "line": 7, "ts": STAMP}
    progress: Record = {"kind": "progress", "line": 8, "done": 1604, "total": 3500}
    rows = live_rows([ready, progress], LiveState(), "server_log", "/log", now=NOW)
    assert rows.events == [EventRow("event", T, 7, {"event": "ready", "ts": STAMP})]
    assert rows.samples == [Sample("client_done", "", NOW, 1604.0), Sample("client_total", "", NOW, 3500.0)]


def as_the_follower_does(records: list[Record], state: LiveState) -> Rows:
    """Deliver; on ClockStepSuspected the host's clock is read again (here: it had not stepped) and the
    same records come again, until they go through."""
    for _ in range(len(records) + 1):
        saved = state.stamps.snapshot()
        try:
            return live_rows(records, state, "server_log", "/log", now=NOW)
        except ClockStepSuspected:
            state.stamps.restore(saved)
            state.stamps.clock_checked()
    raise AssertionError("the records never went through")


def test_a_stamp_ahead_of_the_clock_is_quarantined_and_its_event_kept_at_the_read_time() -> None:
    state = LiveState()
    live_rows([decode(1, 0, 10, 0.4)], state, "server_log", "/log", now=NOW)
    crash: Record = {"kind": "event", "event": "crash", "line": 2, "ts": "9999-12-31T23:59:59"}
    rows = as_the_follower_does([crash, decode(3, 1, 500, 0.11, "9999-12-31T23:59:59")], state)
    assert rows == Rows([], [EventRow("event", NOW, 2, {"event": "crash", "ts": "9999-12-31T23:59:59",
                                                         "ts_outlier": "future"})])
    assert state.stamps.counts.future == 2
    assert state.stamps.watermark("server_log", "/log") == T  # the outlier did not move it
    # the quarantined DP1 sample never reached the host's sum
    after = live_rows([decode(4, 0, 11, 0.4)], state, "server_log", "/log", now=NOW)
    assert [(s.metric, s.v) for s in after.host_samples] == [("running_req", 11.0), ("token_usage", 0.4)]


def test_a_record_out_of_line_asks_for_the_clock_first_and_is_taken_as_it_comes_after() -> None:
    # The host's clock stepped 10 min ahead, or back: its next record says so before anything is stored.
    state, base = LiveState(), float(int(time.time())) - 60
    live_rows([decode(1, 0, 10, 0.4, _stamp(base))], state, "server_log", "/log", now=base)
    for step in (600 + 2, -900):
        record = decode(2, 0, 11, 0.4, _stamp(base + step))
        with pytest.raises(ClockStepSuspected):
            live_rows([record], state, "server_log", "/log", now=base)
        assert state.stamps.suspect
        state.stamps.clock_checked()  # read again: the clock had not stepped after all
        rows = live_rows([record], state, "server_log", "/log", now=base)
        assert not state.stamps.suspect and (rows.samples == []) == (step > 0)  # future: quarantined; behind: late
        live_rows([decode(3, 0, 12, 0.4, _stamp(base + 1))], state, "server_log", "/log", now=base)  # in time
    assert state.stamps.counts.clock_checks == 2 and state.stamps.counts.future == 1


def test_metrics_scrapes_get_their_own_series_names() -> None:
    parser = create_parser("prometheus")
    records = [*parser.feed(1, 'sglang:num_running_reqs{model_name="m"} 12.0'),
               *parser.feed(2, 'sglang:token_usage{model_name="m"} 0.5'), *parser.flush()]
    rows = live_rows(records, LiveState(), "metrics", "127.0.0.1:30000/metrics", now=NOW, prefix="metrics_")
    assert rows == Rows([Sample("metrics_running_req", "", NOW, 12.0), Sample("metrics_token_usage", "", NOW, 0.5)],
                        [])


def test_a_host_at_its_series_bound_keeps_its_known_series_and_counts_the_new_ones_dropped() -> None:
    state = LiveState(bounds=HostBounds(Limits(max_series=2)))
    first: Record = {"kind": "decode", "line": 1, "ts": STAMP, "tags": {"DP": 0}, "running_req": 10}
    rows = live_rows([first, decode(2, 0, 11, 0.4)], state, "server_log", "/log", now=NOW)
    # two lines of DP0 in one second: the host's value at that instant is the later one, and the host's
    # series keeps the place its first part gave it (DP0's token_usage is the one over the bound)
    assert rows.samples == [Sample("running_req", "DP0", T, 10.0), Sample("running_req", "DP0", T, 11.0),
                            Sample("running_req", "", T, 11.0)]
    assert state.bounds.as_dict()["samples"] == 1  # token_usage of DP0: a third series


def test_the_batch_builder_stores_exactly_the_live_rows() -> None:
    records = [decode(1, 0, 10, 0.4), {"kind": "event", "event": "ready", "line": 2, "ts": STAMP}, decode(3, 1, 3, 0.2)]
    batch = BatchBuilder("gpu1").from_records("server_log", "/log", records)
    rows = live_rows(records, LiveState(), "server_log", "/log")
    assert (batch.samples, batch.events) == (rows.samples, rows.events)


def test_one_part_at_two_times_in_one_call_gives_the_host_each_times_own_value() -> None:
    from kvwatch.app.pipeline.aggregate import RankAggregator

    samples = [Sample("completions", "/p/B2/out.jsonl", T, 10.0), Sample("completions", "/p/B6/out.jsonl", T, 5.0),
               Sample("completions", "/p/B2/out.jsonl", T + 300, 310.0)]
    assert RankAggregator().host_samples(samples) == [Sample("completions", "", T, 15.0),
                                                      Sample("completions", "", T + 300, 315.0)]
