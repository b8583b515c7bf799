"""The live path as one function (app/pipeline/live.py): literal records in, store rows out, the
host's memory in an explicit LiveState."""

from __future__ import annotations

import datetime as dt
import time

from kvwatch.app.pipeline.batches import BatchBuilder
from kvwatch.app.pipeline.bounds import HostBounds, Limits
from kvwatch.app.pipeline.live import LiveState, Rows, live_rows
from kvwatch.app.store.base import EventRow, Sample
from kvwatch.parsers import Record, create_parser

T = 1_767_225_601.0  # 2026-01-01T00:00:01 UTC, the records' stamp
STAMP = "2026-01-01T00:00:01"
NOW = T + 0.5  # when their lines were read


def _stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def decode(line: int, dp: int, running: int, usage: float, ts: str = STAMP) -> Record:
    return {"kind": "decode", "line": line, "ts": ts, "tags": {"DP": dp, "TP": dp},
            "running_req": running, "token_usage": usage}


def test_two_dp_ranks_each_followed_by_the_host_value_combined_by_the_catalog() -> None:
    rows = live_rows([decode(1, 0, 10, 0.4), decode(2, 1, 30, 0.9)], LiveState(), "server_log", "/log", now=NOW)
    assert rows == Rows([
        Sample("running_req", "DP0", T, 10.0), Sample("token_usage", "DP0", T, 0.4),
        Sample("running_req", "", T, 10.0), Sample("token_usage", "", T, 0.4),
        # the catalog: running requests add up over the ranks, token usage is the fullest rank's
        Sample("running_req", "DP1", T, 30.0), Sample("token_usage", "DP1", T, 0.9),
        Sample("running_req", "", T, 40.0), Sample("token_usage", "", T, 0.9),
    ], [])
    assert [(s.metric, s.v) for s in rows.host_samples][-2:] == [("running_req", 40.0), ("token_usage", 0.9)]


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


def test_a_stamp_ahead_of_the_clock_is_quarantined_and_its_event_kept_at_the_read_time() -> None:
    state = LiveState()
    live_rows([decode(1, 0, 10, 0.4)], state, "server_log", "/log", now=NOW)
    crash: Record = {"kind": "event", "event": "crash", "line": 2, "ts": "9999-12-31T23:59:59"}
    rows = live_rows([crash, decode(3, 1, 500, 0.11, "9999-12-31T23:59:59")], state, "server_log", "/log", now=NOW)
    assert rows == Rows([], [EventRow("event", NOW, 2, {"event": "crash", "ts": "9999-12-31T23:59:59",
                                                         "ts_outlier": "future"})])
    # the event is kept at once; the sample waits for the host's clock to be read again
    assert (state.stamps.counts.future, state.stamps.counts.held, state.stamps.suspect) == (1, 1, True)
    assert state.stamps.release(("server_log", "/log"), 0.0, now=NOW) == []  # the clock did not step
    assert (state.stamps.counts.future, state.stamps.suspect) == (2, False)
    assert state.stamps.watermark("server_log", "/log") == T  # the outlier did not move it
    # the quarantined DP1 sample never reached the host's sum
    after = live_rows([decode(4, 0, 11, 0.4)], state, "server_log", "/log", now=NOW)
    assert [(s.metric, s.v) for s in after.host_samples] == [("running_req", 11.0), ("token_usage", 0.4)]


def test_held_samples_come_back_moved_by_the_clocks_step() -> None:
    # The host's clock stepped 10 min ahead: its lines come from the "future" until it is read again.
    state, key, base = LiveState(), ("server_log", "/log"), float(int(time.time())) - 60
    live_rows([decode(1, 0, 10, 0.4, _stamp(base))], state, "server_log", "/log", now=base)
    stepped = [decode(n, 0, 10 + n, 0.4, _stamp(base + 600 + n)) for n in range(2, 6)]
    assert live_rows(stepped, state, "server_log", "/log", now=base).samples == []
    assert state.stamps.suspect and state.stamps.counts.held == 4
    back = state.stamps.release(key, -600.0)
    assert sorted({s.t for s in back}) == [base + n for n in range(2, 6)]
    assert (state.stamps.counts.recovered, state.stamps.counts.future, state.stamps.suspect) == (4, 0, False)
    # a step back: lines more than STEP_S behind the watermark wait too, then move forward
    behind = [decode(7, 0, 1, 0.4, _stamp(base - 900))]
    assert live_rows(behind, state, "server_log", "/log", now=base).samples == []
    assert {s.t for s in state.stamps.release(key, 906.0)} == {base + 6}


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
    assert rows.samples == [Sample("running_req", "DP0", T, 10.0), Sample("running_req", "", T, 10.0),
                            Sample("running_req", "DP0", T, 11.0), Sample("running_req", "", T, 11.0)]
    assert state.bounds.as_dict()["samples"] == 1  # token_usage of DP0: a third series


def test_the_batch_builder_stores_exactly_the_live_rows() -> None:
    records = [decode(1, 0, 10, 0.4), {"kind": "event", "event": "ready", "line": 2, "ts": STAMP}, decode(3, 1, 3, 0.2)]
    batch = BatchBuilder("gpu1").from_records("server_log", "/log", records)
    rows = live_rows(records, LiveState(), "server_log", "/log")
    assert (batch.samples, batch.events) == (rows.samples, rows.events)
