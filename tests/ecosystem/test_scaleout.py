"""Scale-out on one database: two `kvwatch collect` processes, each owning its own local hosts, and
one `kvwatch serve --no-collect` showing both, live, on a real temp PostgreSQL cluster; two web apps
whose alerting takes turns through the store's alerts lease, one webhook message per change."""

from __future__ import annotations

import datetime as dt
import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvwatch.app.alerts.delivery import DELIVERY_DOC
from kvwatch.app.alerts.lease import ALERTS_LEASE, BEAT_S, LEASE_DOC, STALE_AFTER_S
from kvwatch.app.cli import main
from kvwatch.app.store import Store, open_store
from tests.alerts.test_alert_webhook import Receiver
from tests.ecosystem.processes import Kvwatch, append_decode_lines, kvwatch_processes, wait_for
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
    with kvwatch_processes(tmp_path) as start, httpx.Client(base_url=base, timeout=30) as client:
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
        wait_for(lambda: client.get("/api/hosts").json()[0]["state"] == "stopped", 30, "h1 shown stopped", everyone)
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
    from kvwatch.app.store.postgres import PostgresStore

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


RULE = "token_usage_high"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


def sent_states(receiver: Receiver) -> list[str]:
    return [b["status"] for b in list(receiver.accepted) if b["alert"]["rule"] == RULE]


def outbox(store: Store) -> list[str]:
    return [d["data"]["status"] for d in store.documents(DELIVERY_DOC) if d["key"].startswith(f"gpu1/{RULE}/")]


def decode_lines(start: float, usages: list[float], step: float = 5.0) -> str:
    """SGLang decode lines logged from `start` (epoch s, written as UTC) every `step` seconds."""
    lines = []
    for i, usage in enumerate(usages):
        stamp = dt.datetime.fromtimestamp(start + i * step, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(
            f"[{stamp} TP0] Decode batch, #running-req: 72, #token: 153179, token usage: {usage:.2f}, "
            "cuda graph: True, gen throughput (token/s): 930.63, #queue-req: 0\n"
        )
    return "".join(lines)


def lease_pid(store: Store) -> int | None:
    docs = [d for d in store.documents(LEASE_DOC) if d["key"] == ALERTS_LEASE]
    owner = docs[0]["data"].get("owner", "") if docs else ""
    return int(owner.split(":")[1]) if owner else None


def alert_events(base: str, seen: list[dict[str, Any]], connected: threading.Event) -> None:
    """The `alert` events of one web app's live stream, into `seen` (a daemon thread's target)."""
    try:
        with httpx.stream("GET", f"{base}/api/stream", timeout=120) as response:
            connected.set()
            event = ""
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event == "alert":
                    seen.append(json.loads(line.split(":", 1)[1]))
    except httpx.HTTPError:  # the app was stopped at the end of the test
        pass


@dataclass
class WebApps:
    """A collector and web apps A (the lease holder) and B on one store, alerting to `receiver`."""

    store: Store
    log: Path
    base_t: float
    a: Kvwatch
    b: Kvwatch
    a_base: str
    b_base: str
    everyone: list[Kvwatch]

    def append(self, offset: float, usages: list[float]) -> None:
        with self.log.open("a") as handle:
            handle.write(decode_lines(self.base_t + offset, usages))


@contextmanager
def two_web_apps(tmp_path: Path, database: str, receiver: Receiver) -> Iterator[WebApps]:
    log = tmp_path / "gpu1.log"
    base_t = time.time() - 700  # log time in the recent past: 10 quiet lines, then 3 min saturated
    log.write_text(decode_lines(base_t, [0.6] * 10))
    config = write_config(tmp_path / "k.toml", database, {"gpu1": log})
    config.write_text(config.read_text().replace("[server]\n", f'[server]\nwebhook = "{receiver.url}"\n'))
    ports = free_port(), free_port()
    a_base, b_base = (f"http://127.0.0.1:{port}" for port in ports)
    store = open_store(database)
    with kvwatch_processes(tmp_path) as start:
        collector = start("collector", ["collect", "--config", str(config)])
        a = start("web-a", ["serve", "--no-collect", "--config", str(config), "--port", str(ports[0])])
        wait_for(lambda: lease_pid(store) == a.proc.pid, 60, "web app A holding the alerts lease", [a])
        b = start("web-b", ["serve", "--no-collect", "--config", str(config), "--port", str(ports[1])])
        everyone = [collector, a, b]
        wait_for(lambda: httpx.get(f"{b_base}/api/alerts").status_code == 200, 60, "web app B up", everyone)
        yield WebApps(store, log, base_t, a, b, a_base, b_base, everyone)
    store.close()


def database_for(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("pg_url")) if backend == "postgres" else str(tmp_path / "k.db")


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_two_web_apps_send_each_alert_once_and_hand_over_on_kill(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, receiver: Receiver
) -> None:
    with two_web_apps(tmp_path, database_for(backend, tmp_path, request), receiver) as apps:
        store, a, b, everyone = apps.store, apps.a, apps.b, apps.everyone
        streamed: list[dict[str, Any]] = []
        connected = threading.Event()
        threading.Thread(target=alert_events, args=(apps.b_base, streamed, connected), daemon=True).start()
        assert connected.wait(20)

        apps.append(50, [0.97] * 36)  # the server saturates
        wait_for(lambda: sent_states(receiver) == ["firing"], 60, "one FIRING", everyone)
        wait_for(lambda: outbox(store) == ["sent"], 20, "the FIRING marked sent in the outbox", everyone)
        # B, which does not hold the lease, shows the alert (from the store) as A does, and streams it live.
        for web in (apps.a_base, apps.b_base):  # B follows the stored states within a tick (1 s)
            wait_for(lambda web=web: RULE in [x["rule"] for x in httpx.get(f"{web}/api/alerts").json()
                                            if x["state"] == "firing"], 5, f"the firing alert in {web}", everyone)
        wait_for(lambda: [x for x in streamed if x["rule"] == RULE and x["state"] == "firing"], 20,
                 "B's stream carrying the alert", everyone)
        time.sleep(3)  # three of B's ticks, a beat and a half: it must not send as well
        assert sent_states(receiver) == ["firing"]

        # The hook goes down; the server recovers; A queues the RESOLVED, cannot deliver it, and is killed.
        receiver.fail_first = 10**6
        attempts = receiver.attempts
        apps.append(230, [0.5] * 70)
        wait_for(lambda: receiver.attempts > attempts, 60, "A trying to send the RESOLVED", everyone)
        assert a.signal(signal.SIGKILL) == -signal.SIGKILL
        killed = time.monotonic()
        receiver.fail_first = receiver.attempts  # the hook is back
        wait_for(lambda: lease_pid(store) == b.proc.pid, 30, "B taking the lease over", everyone)
        took_over = time.monotonic() - killed
        wait_for(lambda: sent_states(receiver) == ["firing", "resolved"], 30, "the RESOLVED, sent by B", everyone)
        time.sleep(3)
        assert sent_states(receiver) == ["firing", "resolved"]
        assert outbox(store) == ["sent", "sent"]
        resolved = [x for x in httpx.get(f"{apps.b_base}/api/alerts").json() if x["rule"] == RULE]
        assert [x["state"] for x in resolved] == ["resolved"]
        dedup = [body["dedup_key"] for body in receiver.accepted]
        assert len(dedup) == len(set(dedup)), "no message of any rule sent twice"
    print(f"alerts lease taken over {took_over:.1f} s after kill -9 of its holder ({backend})")
    assert took_over < STALE_AFTER_S, "a holder of this machine that is gone is replaced within a beat or so"


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_stalled_holder_is_replaced_once_stale_and_sends_nothing_after(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, receiver: Receiver
) -> None:
    # SIGSTOP: the holder's process is alive but silent, as a holder on another machine that is cut
    # off looks to the others: only the lease's age tells, so this is the 6 s path.
    with two_web_apps(tmp_path, database_for(backend, tmp_path, request), receiver) as apps:
        apps.append(50, [0.97] * 36)
        wait_for(lambda: outbox(apps.store) == ["sent"], 60, "one FIRING, sent by A", apps.everyone)
        apps.a.proc.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            apps.append(230, [0.5] * 70)  # the server recovers while A is frozen
            wait_for(lambda: lease_pid(apps.store) == apps.b.proc.pid, 30, "B taking the lease over", apps.everyone)
            took_over = time.monotonic() - stopped
            wait_for(lambda: sent_states(receiver) == ["firing", "resolved"], 30, "the RESOLVED, sent by B",
                     apps.everyone)
        finally:
            apps.a.proc.send_signal(signal.SIGCONT)
        # A wakes with the recovery unevaluated and a lease it no longer trusts: it follows, sends nothing.
        wait_for(lambda: [x["state"] for x in httpx.get(f"{apps.a_base}/api/alerts").json() if x["rule"] == RULE]
                 == ["resolved"], 30, "A showing the RESOLVED that B stored", apps.everyone)
        time.sleep(3)
        assert sent_states(receiver) == ["firing", "resolved"]
        assert lease_pid(apps.store) == apps.b.proc.pid
    print(f"alerts lease taken over {took_over:.1f} s after SIGSTOP of its holder ({backend})")
    # Renewed at most a beat before the stop, stale 6 s after that renewal, seen within a second.
    assert STALE_AFTER_S - BEAT_S - 0.5 <= took_over <= STALE_AFTER_S + 2.5
