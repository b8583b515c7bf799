"""`report`, `export` and `compare` read a store named on the command line (--db PATH, or --workdir of a
demo) without a kvwatch.toml; `kvwatch demo` prints where its store is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvwatch.app.cli import main
from tests.terminal.demo import kvwatch, running_demo, wait_until


def test_report_and_export_read_a_store_given_by_db(collected: tuple[Path, list[str]], tmp_path: Path) -> None:
    config, ids = collected
    database = config.parent / "kvwatch.db"
    assert main(["report", "--db", str(database), "--run", ids[1], "-o", str(tmp_path / "r.html")]) == 0
    assert f"run {ids[1]}" in (tmp_path / "r.html").read_text()  # the host, gpu1, is the store's only one
    assert main(["export", "--db", str(database), "--metric", "token_usage", "-o", str(tmp_path / "e.csv")]) == 0
    assert len((tmp_path / "e.csv").read_text().splitlines()) > 1000


def test_compare_takes_db_as_well_as_database_and_a_workdir(
    collected: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, ids = collected
    outputs = []
    for option in (["--database", str(config.parent / "kvwatch.db")], ["--db", str(config.parent / "kvwatch.db")],
                   ["--workdir", str(config.parent)]):
        assert main(["compare", *option, "--list"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]
    assert all(run_id in outputs[0] for run_id in ids)


def test_a_store_that_is_not_there_is_an_error_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--workdir", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    assert f"{tmp_path / 'kvwatch.db'} does not exist" in capsys.readouterr().err
    assert main(["export", "--db", str(tmp_path / "x.db"), "--config", str(tmp_path / "k.toml")]) == 2
    assert "not both" in capsys.readouterr().err
    assert not (tmp_path / "kvwatch.db").exists() and not (tmp_path / "x.db").exists()


def test_the_demo_prints_its_store_and_report_reads_it_afterwards(tmp_path: Path) -> None:
    with running_demo(tmp_path) as demo:
        wait_until(demo, lambda: demo.get("/api/series?host=demo&metric=token_usage")["points"], "samples")
        printed = wait_until(demo, lambda: re.search(r"kvwatch demo: store (\S+)", demo.tail()), "the store line")
    store = Path(printed.group(1))
    assert store == tmp_path / "world" / "kvwatch.db" and store.is_file()
    assert f"kvwatch demo: workdir {tmp_path / 'world'}" in demo.tail()
    report = kvwatch("report", "--workdir", str(tmp_path / "world"), "-o", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr
    assert "Plotly.newPlot(" in (tmp_path / "r.html").read_text()
    export = kvwatch("export", "--db", str(store), "--metric", "token_usage")
    assert export.returncode == 0, export.stderr
    assert export.stdout.count("\n") > 1


def test_compare_list_is_one_line_a_run_with_only_the_defining_flags(
    collected: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    config, ids = collected
    assert main(["compare", "--db", str(config.parent / "kvwatch.db"), "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split("\t") for line in lines]
    assert [row[0] for row in rows] == ids and {row[1] for row in rows} == {"gpu1"}
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
    assert all(stamp.match(row[2]) for row in rows)
    assert [row[3] for row in rows[:2]] == [rows[1][2], rows[2][2]]  # a run ends where the next starts
    assert rows[2][3] == "running"
    assert rows[0][4] == "--tp-size 8 --mem-fraction-static 0.85"
    assert rows[1][4] == "--tp-size 8 --mem-fraction-static 0.88 --enable-hierarchical-cache --hicache-size 48"
    assert "--model-path" not in "\n".join(lines) and "--port" not in "\n".join(lines)
