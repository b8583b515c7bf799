"""Where a server-log line's append->stored time goes at fleet size: bench/collect_fleet.py's `app` run,
with each host thread's steps timed.

usage: PYTHONPATH=. python bench/fleet_phases.py [HOSTS] [SECONDS]

For every line the bench appends, from the host thread that stored it (the thread's last step times
before its commit returned):
- write->wake: append until the host loop's wake-up wait returned (the remote `tail -F`, the SSH
  reader thread, and the host loop finishing whatever it was doing, a previous commit included);
- stat: the batched stat's round trip; stat->read: the SFTP read(s) until the log's lines were out;
- commit: from asking the store until the commit returned, split for the group commit into the wait
  for the group's turn, the group's transaction, and the time until the thread ran again after it.
It wraps the steps it times (Watch.wait, SshTransport.stat_many, Tail.poll, GroupCommit._commit) for
this process only; the collector's code is unchanged. Expect the totals a little above collect_fleet.py's.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import bench._collect as collect
from bench.collect_fleet import measure
from kvwatch.app.store.group_commit import GroupCommit
from kvwatch.collectors.ssh.transport import SshTransport
from kvwatch.collectors.tail import Tail
from kvwatch.collectors.watch import Watch

_steps = threading.local()  # this host thread's latest time of each step
_groups: dict[int, tuple[float, float, int]] = {}  # id(batch) -> its group's start, end, size
_lines: list[dict[str, float]] = []
_arrival_marks: dict[int, dict[str, float]] = {}  # index of an arrival (WriteStamps.arrivals) -> its thread's marks
_txn_cpu: list[tuple[float, float, int]] = []  # each group transaction: wall s, its thread's CPU s, batches


def _mark(step: str) -> None:
    marks = getattr(_steps, "marks", None)
    if marks is None:
        marks = _steps.marks = {}
    marks[step] = time.monotonic()


def _timed(cls: Any, name: str, before: str | None, after: Callable[[Any, Any], str | None]) -> None:
    original = getattr(cls, name)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if before:
            _mark(before)
        result = original(self, *args, **kwargs)
        step = after(self, result)
        if step:
            _mark(step)
        return result

    setattr(cls, name, wrapper)


def _instrument() -> None:
    _timed(Watch, "wait", None, lambda _w, woke: "wake" if woke else None)
    _timed(SshTransport, "stat_many", "stat_sent", lambda _t, _r: "stat")
    _timed(Tail, "poll", None, lambda tail, lines: "read" if lines and tail.path.endswith("server.log") else None)
    original_commit, original_group = collect.TimedStore.commit, GroupCommit._commit

    def commit(self: collect.TimedStore, batch: Any) -> None:
        if batch.source == "server_log":
            _mark("commit_asked")
        original_commit(self, batch)

    def group_commit(self: GroupCommit, group: list[Any]) -> None:
        start, cpu0 = time.monotonic(), time.thread_time()
        original_group(self, group)
        end = time.monotonic()
        _txn_cpu.append((end - start, time.thread_time() - cpu0, len(group)))
        for queued in group:
            _groups[id(queued.batch)] = (start, end, len(group))

    def reached(self: collect.WriteStamps, path: str, offset: int) -> None:
        marks = dict(getattr(_steps, "marks", {}))
        group = _groups.pop(getattr(_steps, "batch", 0), None)
        with self.lock:  # this arrival's index in self.arrivals is the count before it (an RLock)
            _arrival_marks[len(self.arrivals)] = {
                **marks, **({"group_start": group[0], "group_end": group[1], "group_size": group[2]} if group else {})}
            original_reached(self, path, offset)

    def settle(self: collect.WriteStamps, writes: list[tuple[str, int, float]]) -> list[tuple[float, int]]:
        matched = original_settle(self, writes)
        for written, index in matched:
            _lines.append({"written": written, "stored": self.arrivals[index][2], **_arrival_marks.get(index, {})})
        return matched

    def store_commit(self: collect.TimedStore, batch: Any) -> None:
        _steps.batch = id(batch)
        commit(self, batch)

    original_reached, original_reset = collect.WriteStamps.reached, collect.WriteStamps.reset
    original_settle = collect.WriteStamps.settle
    collect.WriteStamps.settle = settle  # type: ignore[method-assign]
    collect.TimedStore.commit = store_commit  # type: ignore[method-assign]
    GroupCommit._commit = group_commit  # type: ignore[method-assign]
    collect.WriteStamps.reached = reached  # type: ignore[method-assign]

    def reset(self: collect.WriteStamps) -> None:
        _lines.clear()
        _arrival_marks.clear()
        _txn_cpu.clear()
        original_reset(self)

    collect.WriteStamps.reset = reset  # type: ignore[method-assign]


def _spans(line: dict[str, float]) -> dict[str, float]:
    spans = {"total": line["stored"] - line["written"]}
    if all(k in line for k in ("wake", "stat_sent", "stat", "read", "commit_asked")):
        spans |= {"write->wake": line["wake"] - line["written"], "stat": line["stat"] - line["stat_sent"],
                  "stat->read": line["read"] - line["stat"], "commit": line["stored"] - line["commit_asked"]}
    if "group_start" in line and "commit_asked" in line:
        spans |= {"commit: wait for the group's turn": line["group_start"] - line["commit_asked"],
                  "commit: the group's transaction": line["group_end"] - line["group_start"],
                  "commit: until the thread ran again": line["stored"] - line["group_end"]}
    return spans


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"n": len(ordered), "p50_ms": round(1000 * at(0.5)), "p95_ms": round(1000 * at(0.95)),
            "mean_ms": round(1000 * statistics.fmean(ordered))}


def main() -> None:
    hosts = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    _instrument()
    result = measure("app", hosts, seconds)
    print(json.dumps(result), flush=True)
    by_span: dict[str, list[float]] = {}
    for line in _lines:
        for span, value in _spans(line).items():
            by_span.setdefault(span, []).append(value)
    for span, values in by_span.items():
        print(json.dumps({"span": span, **_summary(values)}), flush=True)
    if _txn_cpu:
        wall, cpu = sum(t[0] for t in _txn_cpu), sum(t[1] for t in _txn_cpu)
        print(json.dumps({"group_transactions": len(_txn_cpu), "wall_s": round(wall, 1), "thread_cpu_s": round(cpu, 1),
                          "cpu_share_of_wall": round(cpu / max(wall, 1e-9), 2)}))
    sizes = sorted(line["group_size"] for line in _lines if "group_size" in line)
    if sizes:
        print(json.dumps({"group_size_batches": {"p50": sizes[len(sizes) // 2], "p95": sizes[int(0.95 * len(sizes))]}}))


if __name__ == "__main__":
    main()
