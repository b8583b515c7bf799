"""Scale-out on one database: two `kvwatch collect` processes, each owning its own local hosts, and
one `kvwatch serve --no-collect` showing both, live, on a real temp PostgreSQL cluster."""

from __future__ import annotations

import json
import re
import signal
import threading
from pathlib import Path

import httpx
import pytest

from app.cli import main
from tests.ecosystem.processes import append_decode_lines, kvwatch_processes, wait_for
from tests.fixtures.web import free_port

H1_VALUES, H2_VALUES = range(1001, 1021), range(2001, 2021)
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: .+$")


def write_config(path: Path, database: str, hosts: dict[str, Path]) -> Path:
    text = f'[server]\ndatabase = "{database}"\n'
    for name, log in hosts.items():
        text += f'\n[[hosts]]\nname = "{name}"\nssh = "local"\nserver_log = "{log}"\n'
    path.write_text(text)
    return path


def running_values(client: httpx.Client, host: str) -> list[int]:
    points = client.get("/api/series", params={"host": host, "metric": "running_req"}).json()["points"]
    return sorted(int(v) for _, v in points)


def live_samples(base: str, hosts: set[str], timeout: float = 20.0) -> dict[str, set[int]]:
    """running_req values per host from the SSE stream, until every host in `hosts` has sent some."""
    seen: dict[str, set[int]] = {}
    with httpx.stream("GET", f"{base}/api/stream", timeout=timeout) as response:
        event = ""
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "sample":
                data = json.loads(line.split(":", 1)[1])
                values = {int(v) for _, v in data["points"].get("running_req", [])}
                seen.setdefault(data["host"], set()).update(values)
                if hosts <= {h for h, v in seen.items() if v}:
                    return seen
    return seen


@pytest.mark.postgres
def test_two_collectors_one_web_app(pg_url: str, tmp_path: Path) -> None:
    database = pg_url
    logs = {name: tmp_path / f"{name}.log" for name in ("h1", "h2")}
    append_decode_lines(logs["h1"], H1_VALUES)
    append_decode_lines(logs["h2"], H2_VALUES)
    shared = write_config(tmp_path / "all.toml", database, logs)  # one file for the web app and collector A
    only_h2 = write_config(tmp_path / "b.toml", database, {"h2": logs["h2"]})  # collector B: its own file
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with kvwatch_processes(tmp_path) as start, httpx.Client(base_url=base, timeout=10) as client:
        a = start("collector-a", ["collect", "--config", str(shared), "--only", "h1"])
        b = start("collector-b", ["collect", "--config", str(only_h2)])
        web = start("web", ["serve", "--no-collect", "--config", str(shared), "--port", str(port)])
        everyone = [a, b, web]
        wait_for(lambda: running_values(client, "h1") == list(H1_VALUES)
                 and running_values(client, "h2") == list(H2_VALUES), 60, "both hosts' history via the web app",
                 everyone)

        hosts = {h["name"]: h for h in client.get("/api/hosts").json()}
        assert hosts["h1"]["state"] == hosts["h2"]["state"] == "up"
        assert hosts["h1"]["owner"].endswith(f":{a.proc.pid}")
        assert hosts["h2"]["owner"].endswith(f":{b.proc.pid}")
        exposition = client.get("/metrics").text  # what Prometheus scrapes from the web app
        assert 'kvwatch_host_up{host="h1"} 1.0' in exposition and 'kvwatch_host_up{host="h2"} 1.0' in exposition

        # Live: lines written now reach a browser of the web-only app through the store.
        append_decode_lines(logs["h1"], range(1101, 1106))
        append_decode_lines(logs["h2"], range(2101, 2106))
        seen = live_samples(base, {"h1", "h2"})
        assert seen["h1"] & set(range(1101, 1106)), seen
        assert seen["h2"] & set(range(2101, 2106)), seen

        # A second collector for a host that is already collected is refused: it would store every line twice.
        intruder = start("intruder", ["collect", "--config", str(shared), "--only", "h1"])
        assert intruder.wait(60) == 2, intruder.stderr
        assert "already collected by" in intruder.stderr and f":{a.proc.pid}" in intruder.stderr

        assert a.signal(signal.SIGTERM) == 0, a.stderr  # docker stop / systemd: a normal end
        wait_for(lambda: client.get("/api/hosts").json()[0]["state"] == "stopped", 15, "h1 shown stopped", everyone)
        assert b.signal(signal.SIGINT) == 130, b.stderr  # Ctrl-C

        # Each line stored once: no duplicate from the refused collector or from the restarts.
        assert running_values(client, "h1") == [*H1_VALUES, *range(1101, 1106)]
        assert running_values(client, "h2") == [*H2_VALUES, *range(2101, 2106)]

    for process in (a, b):
        lines = [line for line in process.stderr.splitlines() if line.strip()]
        assert lines, process.name
        assert all(LOG_LINE.match(line) for line in lines), process.stderr
        assert any("collecting 1 hosts into" in line for line in lines)


def test_collect_only_names_an_unknown_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "k.toml", str(tmp_path / "k.db"), {"h1": tmp_path / "h1.log"})
    assert main(["collect", "--config", str(config), "--only", "h1,gpu9"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"kvwatch: error: --only: no host named 'gpu9' in {config} (hosts: h1)"
    ]


@pytest.mark.postgres
def test_collectors_starting_together_share_one_schema(pg_url: str) -> None:
    # Several collectors started at once (a deploy, a reboot) all open the store on a fresh database.
    from app.store.postgres import PostgresStore

    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def open_store() -> None:
        barrier.wait()
        try:
            PostgresStore(pg_url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    store = PostgresStore(pg_url)
    try:
        assert store.schema_version() > 0
    finally:
        store.close()
