"""Runs from stored events: starts, restarts, rotation, failures, controller runs, persistence."""

from __future__ import annotations

from typing import Any

from kvwatch.app.runs import RUN_DOC, detect_runs, list_runs, record_controller_run
from kvwatch.app.store.base import Batch, EventRow
from kvwatch.app.store.sqlite import SqliteStore

T0 = 1_771_934_400.0  # 2026-02-24 12:00:00 UTC


def args(t: float, line: int, **flags: Any) -> dict[str, Any]:
    return {
        "kind": "server_args",
        "t": t,
        "line": line,
        "source": "server_log",
        "args": {"model_path": "/m", "port": 30000, **flags},
    }


def capacity(t: float, line: int, tokens: int, **tags: int) -> dict[str, Any]:
    return {
        "kind": "capacity",
        "t": t,
        "line": line,
        "source": "server_log",
        "tags": tags,
        "max_total_num_tokens": tokens,
        "max_running_requests": 150,
        "context_len": 262144,
    }


def event(t: float, line: int, name: str) -> dict[str, Any]:
    return {"kind": "event", "t": t, "line": line, "source": "server_log", "event": name}


def launch(t: float, line: int, tokens: int, **flags: Any) -> list[dict[str, Any]]:
    return [args(t, line, **flags), capacity(t + 40, line + 5, tokens), event(t + 42, line + 9, "ready")]


def test_each_server_args_dump_starts_a_run_with_its_flags_and_capacity() -> None:
    events = [
        *launch(T0, 1, 116_000, mem_fraction_static=0.85),
        event(T0 + 500, 900, "retract"),
        *launch(T0 + 3600, 5000, 159_000, mem_fraction_static=0.88, enable_hierarchical_cache=True),
    ]
    runs = detect_runs("gpu1", events)
    assert [r.started_at for r in runs] == [T0, T0 + 3600]
    assert runs[0].flags == {"model-path": "/m", "mem-fraction-static": 0.85}  # port: not a config choice
    assert runs[1].flags["enable-hierarchical-cache"] is True
    assert [r.capacity["max_total_num_tokens"] for r in runs] == [116_000, 159_000]
    assert runs[0].ended_at == T0 + 3600 and runs[1].ended_at is None
    assert [r.state for r in runs] == ["ended", "running"]
    assert runs[0].id == "gpu1-20260224T120000"


def test_capacity_repeated_by_every_rank_is_one_start_but_a_relaunch_without_dump_is_a_new_run() -> None:
    ranks = [capacity(T0 + 40, 5 + r, 116_000, TP=r) for r in range(8)]
    relaunch = [capacity(T0 + 2000, 700, 159_000), event(T0 + 2002, 703, "ready")]
    runs = detect_runs("h", [args(T0, 1), *ranks, event(T0 + 42, 20, "ready"), *relaunch])
    assert len(runs) == 2
    assert runs[1].started_at == T0 + 2000 and runs[1].capacity["max_total_num_tokens"] == 159_000
    assert runs[1].flags == {}  # its dump was not collected: the run exists, its flags are unknown


def test_log_starting_over_is_a_new_run() -> None:
    # Rotation: line numbers fall back; the new file's dump belongs to the same new run.
    events = [*launch(T0, 1, 116_000), event(T0 + 100, 400, "retract"), *launch(T0 + 900, 1, 159_000)]
    runs = detect_runs("h", events)
    assert len(runs) == 2 and runs[1].capacity["max_total_num_tokens"] == 159_000
    only_rotation = detect_runs("h", [*launch(T0, 1, 116_000), event(T0 + 900, 3, "retract")])
    assert [r.started_at for r in only_rotation] == [T0, T0 + 900]


def test_crash_marks_the_run_failed_and_early_samples_get_a_run_of_their_own() -> None:
    events = [args(T0, 10, mem_fraction_static=0.93), event(T0 + 45, 60, "oom"), event(T0 + 46, 70, "crash")]
    runs = detect_runs("h", events, first_sample_t=T0 - 3600)
    assert [r.state for r in runs] == ["ended", "failed"]
    assert runs[0].started_at == T0 - 3600 and runs[0].flags == {} and runs[0].ended_at == T0
    assert runs[1].failed_at == T0 + 45


def commit_events(store: SqliteStore, host: str, events: list[dict[str, Any]]) -> None:
    rows = [
        EventRow(e["kind"], e["t"], e["line"], {k: v for k, v in e.items() if k not in ("kind", "t", "line", "source")})
        for e in events
    ]
    store.commit(Batch(host, "server_log", "/log", events=rows))


def test_controller_run_takes_over_the_launch_it_caused_and_runs_are_persisted() -> None:
    store = SqliteStore(":memory:")
    commit_events(store, "gpu1", launch(T0, 1, 116_000, mem_fraction_static=0.85))
    run_id = record_controller_run(store, "gpu1", {"--mem-fraction-static": 0.88}, T0 + 3000, "/logs/s.log")
    before = list_runs(store, "gpu1")
    assert [r.id for r in before] == ["gpu1-20260224T120000", run_id]
    assert before[1].state == "starting" and before[1].flags == {"mem-fraction-static": 0.88}
    assert before[0].ended_at == T0 + 3000
    # The server comes up 4 minutes later and logs its full dump: same run, flags as logged.
    commit_events(store, "gpu1", launch(T0 + 3240, 2, 159_000, mem_fraction_static=0.88, tp_size=8))
    after = list_runs(store, "gpu1")
    assert [r.id for r in after] == [before[0].id, run_id]
    assert after[1].source == "controller" and after[1].started_at == T0 + 3000
    assert after[1].flags["tp-size"] == 8 and after[1].requested_flags == {"mem-fraction-static": 0.88}
    assert after[1].capacity["max_total_num_tokens"] == 159_000 and after[1].state == "running"
    assert after[1].log_path == "/logs/s.log"
    stored = {d["key"]: d["data"] for d in store.documents(RUN_DOC, "gpu1")}
    assert stored[run_id]["capacity"]["max_total_num_tokens"] == 159_000
    assert stored[before[0].id]["state"] == "ended"
