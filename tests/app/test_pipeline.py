"""Local file -> parser -> SQLite: every written line stored exactly once, across a kvwatch restart."""

from __future__ import annotations

from pathlib import Path

from tests.app.slice_helpers import append_lines, start_services, wait_until


def stored_running(tmp_path: Path) -> list[float]:
    services = start_services(tmp_path)
    try:
        return services.store.series("local", "running_req")[1].tolist()
    finally:
        services.store.close()


def test_lines_are_stored_with_their_offset(tmp_path: Path) -> None:
    append_lines(tmp_path / "server.log", 1, 50)
    services = start_services(tmp_path)
    services.start_collectors()
    try:
        wait_until(lambda: len(services.store.series("local", "running_req")[0]) == 50)
        state = services.store.load_state("local", "server_log", str(tmp_path / "server.log"))
        assert state is not None
        assert state["offset"] == (tmp_path / "server.log").stat().st_size
        assert state["line_no"] == 50
    finally:
        services.stop()


def test_restart_neither_loses_nor_duplicates(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append_lines(log, 1, 30)
    first = start_services(tmp_path)
    first.start_collectors()
    wait_until(lambda: len(first.store.series("local", "running_req")[0]) == 30)
    first.stop()
    append_lines(log, 31, 20)
    with log.open("a") as handle:
        handle.write("[2026-02-24 12:59:59 TP0] Decode batch, #running-req: 999")  # no newline yet
    second = start_services(tmp_path)
    second.start_collectors()
    try:
        wait_until(lambda: len(second.store.series("local", "running_req")[0]) == 50)
        with log.open("a") as handle:
            handle.write(", token usage: 0.50\n")
        wait_until(lambda: len(second.store.series("local", "running_req")[0]) == 51)
    finally:
        second.stop()
    assert sorted(stored_running(tmp_path)) == [*range(1, 51), 999]


def test_output_files_are_counted(tmp_path: Path) -> None:
    dataset = tmp_path / "prepared" / "B1"
    dataset.mkdir(parents=True)
    (dataset / "raw_responses.jsonl").write_text('{"id": 1}\n{"id": 2}\n{"id": 3')
    append_lines(tmp_path / "server.log", 1, 1)
    services = start_services(tmp_path)
    services.start_collectors()
    try:
        wait_until(lambda: len(services.store.series("local", "completions")[1]) > 0)
        assert services.store.series("local", "completions")[1][-1] == 2  # the partial third line waits
        later = tmp_path / "prepared" / "B2"
        later.mkdir()
        (later / "raw_responses.jsonl").write_text("{}\n" * 5)
        wait_until(lambda: services.store.series("local", "completions")[1][-1] == 7)
    finally:
        services.stop()


def test_completions_total_survives_restart(tmp_path: Path) -> None:
    for name, count in (("B1", 4), ("B2", 3)):
        (tmp_path / "prepared" / name).mkdir(parents=True)
        (tmp_path / "prepared" / name / "raw_responses.jsonl").write_text("{}\n" * count)
    append_lines(tmp_path / "server.log", 1, 1)
    first = start_services(tmp_path)
    first.start_collectors()
    wait_until(lambda: first.store.series("local", "completions")[1][-1:].tolist() == [7])
    first.stop()
    with (tmp_path / "prepared" / "B2" / "raw_responses.jsonl").open("a") as handle:
        handle.write("{}\n")
    second = start_services(tmp_path)
    second.start_collectors()
    try:
        wait_until(lambda: second.store.series("local", "completions")[1][-1:].tolist() == [8])
    finally:
        second.stop()
