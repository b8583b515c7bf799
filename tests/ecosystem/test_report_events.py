"""The report summarises each run and collapses a burst of one event into one row with its count and
span, instead of one row a line (a saturated run logs hundreds of retractions)."""

from __future__ import annotations

import re
from pathlib import Path

from kvwatch.app.cli import main
from kvwatch.app.compare.offline import load_log
from kvwatch.app.report.events import collapse
from kvwatch.app.runs import list_runs
from kvwatch.app.store.sqlite import SqliteStore
from tests.compare.synth import THREE_CONFIGS, write_log

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
RETRACT = "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.5000 -> 1.0000"


def test_collapse_groups_consecutive_events_of_one_kind() -> None:
    events = [{"t": 60.0 * i, "event": kind, "message": f"m{i}"}
              for i, kind in enumerate(["ready", "retract", "retract", "retract", "oom", "retract"])]
    groups = collapse(events)
    assert [(g.event, g.count, g.first, g.last, g.detail) for g in groups] == [
        ("ready", 1, 0.0, 0.0, "m0"), ("retract", 3, 60.0, 180.0, "m1"), ("oom", 1, 240.0, 240.0, "m4"),
        ("retract", 1, 300.0, 300.0, "m5")]
    assert groups[1].label() == "retract x3, 00:01–00:03"
    assert groups[2].label() == "oom, 00:04"


def test_thirty_retractions_are_one_row_and_each_run_has_its_summary(tmp_path: Path) -> None:
    write_log(tmp_path / "server.log", THREE_CONFIGS[:2], seed=5)
    lines = (tmp_path / "server.log").read_text().splitlines()
    second_run = max(i for i, line in enumerate(lines) if "server_args=" in line)
    with_retracts: list[str] = []
    added = 0
    for i, line in enumerate(lines):
        with_retracts.append(line)
        found = STAMP.match(line)
        if i > second_run + 50 and (i - second_run) % 5 == 0 and added < 30 and found:
            with_retracts.append(f"[{found.group(1)} TP0] {RETRACT}")
            added += 1
    assert len(with_retracts) == len(lines) + 30
    (tmp_path / "server.log").write_text("\n".join(with_retracts) + "\n")
    store = SqliteStore(str(tmp_path / "kvwatch.db"))
    load_log(store, "gpu1", tmp_path / "server.log")
    first, second = list_runs(store, "gpu1")
    store.close()

    out = tmp_path / "r.html"
    assert main(["report", "--db", str(tmp_path / "kvwatch.db"), "--no-compare", "-o", str(out)]) == 0
    page = out.read_text()
    latest = page.split("<h2>Latest events</h2>", 1)[1]
    assert latest.count("<td>retract</td>") == 1  # one row, not thirty
    assert "<td>retract</td><td>30</td>" in latest
    runs = page.split("<h2>Runs</h2>", 1)[1].split("</table>", 1)[0]
    rows = runs.split("<tr>")[2:]
    assert [row.split("</td>")[0].removeprefix("<td>") for row in rows] == [first.id, second.id]
    assert "--mem-fraction-static 0.85" in rows[0] and "retract" not in rows[0]
    assert re.search(r"retract x30, \d\d:\d\d–\d\d:\d\d", rows[1]), rows[1]
    assert "--mem-fraction-static 0.88 --enable-hierarchical-cache" in rows[1] and "--model-path" not in runs
