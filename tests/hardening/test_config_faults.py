"""Every malformed kvwatch.toml field is one line naming it (and never echoes a secret); a running
`kvwatch serve` keeps its last good config when a reload (SIGHUP) fails, and applies a good one:
hosts, their alert rules, and (one line naming them) not the server keys that need a restart."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from kvwatch.app.cli import main
from kvwatch.app.config import load_config
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import append_lines, wait_until
from tests.fixtures.web import free_port
from tests.hardening.test_reload_complete import T0, decode_lines

SECRET = "tok-SECRET-9f8e7d"
SSH_HOST = "[[hosts]]\nname = 'gpu1'\nssh = 'root@127.0.0.1:22'\nserver_log = '/x.log'\n"


def one_line_error(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "kvwatch.toml"
    path.write_text(text)
    code = main(["collect", "--config", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0]
    return lines[0]


def key_files(tmp_path: Path) -> tuple[Path, Path]:
    key, known = tmp_path / "id_test", tmp_path / "known_hosts"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETKEYMATERIAL\n-----END OPENSSH PRIVATE KEY-----\n")
    key.chmod(0o600)
    known.write_text("")
    return key, known


CASES = [
    ("[server]\nport = 'eighty'\n", "server.port"),
    ("[server]\nport = 70000\n", "server.port"),
    ("[server]\nbogus = 1\n", "server.bogus"),
    ("[serverr]\n", "serverr"),
    (SSH_HOST + "target_completions = 'many'\n", "hosts['gpu1'].target_completions"),
    (SSH_HOST + "gpu = 'yes'\n", "hosts['gpu1'].gpu"),
    (SSH_HOST + "outputs = 'a.jsonl'\n", "hosts['gpu1'].outputs"),
    (SSH_HOST + "outputs = ['/data/[abc/*.jsonl']\n", "hosts['gpu1'].outputs"),
    (SSH_HOST + "colour = 'red'\n", "hosts['gpu1'].colour"),
    ("[[hosts]]\nname = 'gpu1'\nssh = 'root@host:notaport'\nserver_log = '/x'\n", "hosts['gpu1'].ssh"),
    ("[[hosts]]\nname = 'gpu1'\nserver_log = '/x'\n", "hosts['gpu1'].ssh"),
    (SSH_HOST + "identity_file = '{tmp}/missing_key'\n", "hosts['gpu1'].identity_file"),
    (SSH_HOST + "identity_file = '{tmp}'\n", "hosts['gpu1'].identity_file"),
    (SSH_HOST + "identity_file = '{key}'\nknown_hosts = '{tmp}/no_known_hosts'\n", "hosts['gpu1'].known_hosts"),
    ("[server]\nwebhook = 'ftp://user:pw@hooks.example/T0/B0/xyz'\n" + SSH_HOST, "server.webhook"),
    ("[alerts.token_usage_high]\nfire_at = 'high'\n" + SSH_HOST, "alerts.token_usage_high"),
    ("not toml at all = = =\n", "not valid TOML"),
    ("[server]\nretention_days = '7d'\n", "server.retention_days"),
    ("[server]\nretention_days = true\n", "server.retention_days"),
    ("[server]\nretention_days = 0\n", "server.retention_days"),
    ("[server]\nretention_days = -3\n", "server.retention_days"),
    ("[server]\nretention_days = 0.5\n", "server.retention_days"),
    ("[server]\nretention_days = nan\n", "server.retention_days"),
    ("[server]\nretention_days = inf\n", "server.retention_days"),
]


@pytest.mark.parametrize(("text", "field"), CASES)
def test_each_bad_field_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              text: str, field: str) -> None:
    key, _ = key_files(tmp_path)
    line = one_line_error(tmp_path, text.format(tmp=tmp_path, key=key), capsys)
    assert field in line, line
    assert "Traceback" not in line


def test_a_world_readable_private_key_is_refused_without_showing_it(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    key, known = key_files(tmp_path)
    key.chmod(0o644)
    line = one_line_error(tmp_path, SSH_HOST + f"identity_file = '{key}'\nknown_hosts = '{known}'\n", capsys)
    assert "hosts['gpu1'].identity_file" in line and "0644" in line and "chmod 600" in line
    assert "SECRETKEYMATERIAL" not in line


@pytest.mark.parametrize("text", [
    f"[server]\ntoken = ['{SECRET}']\n",
    f"[server]\ntoken = 12345\nhost = '{SECRET}'\n[[hosts]]\nname = 'a'\n",
    f"[server]\nwebhook = 'gopher://u:{SECRET}@hooks.example/{SECRET}'\n" + SSH_HOST,
    f"[server]\nwebhook = ['https://hooks.example/{SECRET}']\n",
])
def test_errors_never_echo_a_token_or_webhook(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    line = one_line_error(tmp_path, text, capsys)
    assert SECRET not in line and "12345" not in line, line


def test_public_bind_without_token_is_refused_and_a_token_is_never_printed(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text("[server]\nhost = '0.0.0.0'\n")
    assert main(["serve", "--config", str(path)]) == 2
    assert "refusing to bind 0.0.0.0 without a token" in capsys.readouterr().err


def local_host(name: str, log: Path) -> str:
    return f"[[hosts]]\nname = '{name}'\nssh = 'local'\nserver_log = '{log}'\n"


def hosts_of(url: str) -> set[str]:
    return {h["name"] for h in httpx.get(f"{url}/api/hosts", timeout=10).json()}


def test_sighup_reload_keeps_the_last_good_config_and_applies_a_good_one(tmp_path: Path) -> None:
    for name in ("a", "b"):
        append_lines(tmp_path / f"{name}.log", 1, 50)
    port = free_port()
    path = tmp_path / "kvwatch.toml"
    server = f"[server]\nport = {port}\ndata_dir = '{tmp_path}'\n"
    path.write_text(server + local_host("a", tmp_path / "a.log"))
    env = {**os.environ, "KVWATCH_TOKEN": SECRET}
    proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "serve", "--config", str(path)], env=env,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _up(url), timeout=90)
        assert hosts_of(url) == {"a"}
        bad_b = "[[hosts]]\nname = 'b'\nssh = 3\nserver_log = '/x'\n"
        path.write_text(server + local_host("a", tmp_path / "a.log") + bad_b)
        proc.send_signal(signal.SIGHUP)
        time.sleep(2)
        assert proc.poll() is None, "a bad reload must not stop kvwatch"
        assert hosts_of(url) == {"a"}
        # A good file: a removed, b added, s added with a saturated server, and two server keys
        # changed that need a restart (named in one line, not applied: it still answers on `port`).
        (tmp_path / "s.log").write_text(decode_lines(T0, 0.97, 40))
        moved = f"[server]\nport = {free_port()}\ndata_dir = '{tmp_path}'\nretention_days = 30\n"
        path.write_text(moved + local_host("b", tmp_path / "b.log") + local_host("s", tmp_path / "s.log"))
        proc.send_signal(signal.SIGHUP)
        wait_until(lambda: hosts_of(url) == {"b", "s"}, timeout=30)
        series = f"{url}/api/series?host=b&metric=running_req"
        wait_until(lambda: len(httpx.get(series, timeout=10).json()["points"]) == 50, timeout=30)
        # Alerting knows the added host: its token_usage_high fires from its log, `for` after it began.
        firing = f"{url}/api/alerts?host=s"
        wait_until(lambda: [(a["rule"], a["state"], a["since"]) for a in httpx.get(firing, timeout=10).json()
                            if a["rule"] == "token_usage_high"] == [("token_usage_high", "firing", T0 + 120)],
                   timeout=30)
        # A wrong token is refused and neither it nor the real one ends up in the log.
        refused = httpx.post(f"{url}/api/hosts/b/restart", json={"preset": "x"},
                             headers={"Authorization": "Bearer wrong-guess"}, timeout=10)
        assert refused.status_code == 401 and SECRET not in refused.text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    reload_errors = [line for line in err.splitlines() if "reload refused" in line]
    assert len(reload_errors) == 1 and "hosts['b'].ssh" in reload_errors[0], err
    kept = [line for line in err.splitlines() if "not applied" in line]
    assert len(kept) == 1 and "server.port, server.retention_days changed" in kept[0], err
    assert SECRET not in err and "wrong-guess" not in err


def test_web_only_serve_reloads_on_sighup(tmp_path: Path) -> None:
    """`serve --no-collect` reads what other processes collect: a reload changes the hosts it shows and
    alerts on, and starts no collector (the hosts' logs stay unread by this process)."""
    append_lines(tmp_path / "a.log", 1, 10)
    port = free_port()
    path = tmp_path / "kvwatch.toml"
    server = f"[server]\nport = {port}\ndata_dir = '{tmp_path}'\n"
    path.write_text(server + local_host("a", tmp_path / "a.log"))
    proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "serve", "--no-collect", "--config", str(path)],
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _up(url), timeout=90)
        assert hosts_of(url) == {"a"}
        path.write_text(server + local_host("a", tmp_path / "a.log") + local_host("b", tmp_path / "b.log"))
        proc.send_signal(signal.SIGHUP)
        wait_until(lambda: hosts_of(url) == {"a", "b"}, timeout=30)
        assert proc.poll() is None
        series = httpx.get(f"{url}/api/series?host=a&metric=running_req", timeout=10).json()
        assert series["points"] == []  # nothing collected here: web only
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err
    assert "reloaded" in err and "reload refused" not in err, err


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/hosts", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_an_unreachable_host_is_one_line_in_its_health_and_the_others_go_on(tmp_path: Path) -> None:
    key, known = key_files(tmp_path)
    append_lines(tmp_path / "a.log", 1, 20)
    closed = free_port()  # nothing listens there
    path = tmp_path / "kvwatch.toml"
    path.write_text(f"[server]\ndata_dir = '{tmp_path}'\n" + local_host("a", tmp_path / "a.log")
                    + f"[[hosts]]\nname = 'gone'\nssh = 'root@127.0.0.1:{closed}'\nidentity_file = '{key}'\n"
                    f"known_hosts = '{known}'\nserver_log = '/x.log'\n")
    services = build_services(load_config(path))
    services.start_collectors()
    try:
        gone, local = services.collectors["gone"], services.collectors["a"]
        wait_until(lambda: gone.health.last_error is not None, timeout=30)
        wait_until(lambda: len(services.store.series("a", "running_req")[0]) == 20, timeout=30)
        error = gone.health.last_error or ""
        assert gone.health.state != "up" and local.health.state == "up"
        assert "\n" not in error and f"127.0.0.1:{closed}" in error, error
    finally:
        services.stop()


def stored_count(database: Path, host: str) -> int:
    """Samples stored for the host, read-only beside the writing process; -1 while it sets the file up."""
    try:
        with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as db:
            rows = db.execute("SELECT count(*) FROM samples WHERE host = ? AND metric = 'running_req'", (host,))
            return int(rows.fetchone()[0])
    except sqlite3.OperationalError:  # not created yet, or the schema not yet migrated
        return -1


def test_collect_reloads_on_sighup_and_keeps_the_last_good_config(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        append_lines(tmp_path / f"{name}.log", 1, 50)
    path, database = tmp_path / "kvwatch.toml", tmp_path / "kvwatch.db"
    server = f"[server]\ndata_dir = '{tmp_path}'\n"
    path.write_text(server + local_host("a", tmp_path / "a.log"))
    proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "collect", "--config", str(path)],
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: stored_count(database, "a") == 50, timeout=90)
        # A changed file: host b added, host a pointed at another log (restarted, from c.log's start),
        # and retention turned on, which needs a restart (named, not applied).
        path.write_text(server + "retention_days = 7\n" + local_host("a", tmp_path / "c.log")
                        + local_host("b", tmp_path / "b.log"))
        proc.send_signal(signal.SIGHUP)
        wait_until(lambda: stored_count(database, "b") == 50 and stored_count(database, "a") == 100, timeout=30)
        # A broken file: refused with one line, and both hosts go on collecting.
        bad_b = "[[hosts]]\nname = 'b'\nssh = 3\nserver_log = '/x'\n"
        path.write_text(server + local_host("a", tmp_path / "c.log") + bad_b)
        proc.send_signal(signal.SIGHUP)
        time.sleep(2)
        assert proc.poll() is None, "a bad reload must not stop kvwatch collect"
        append_lines(tmp_path / "b.log", 51, 10)
        append_lines(tmp_path / "c.log", 51, 10)
        wait_until(lambda: stored_count(database, "b") == 60 and stored_count(database, "a") == 110, timeout=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    reload_errors = [line for line in err.splitlines() if "reload refused" in line]
    assert len(reload_errors) == 1 and "hosts['b'].ssh" in reload_errors[0], err
    kept = [line for line in err.splitlines() if "not applied" in line]
    assert len(kept) == 1 and "server.retention_days changed but not applied" in kept[0], err


def test_collect_only_reload_keeps_its_share_of_the_hosts(tmp_path: Path) -> None:
    for name in ("a", "b"):
        append_lines(tmp_path / f"{name}.log", 1, 50)
    path, database = tmp_path / "kvwatch.toml", tmp_path / "kvwatch.db"
    server = f"[server]\ndata_dir = '{tmp_path}'\n"
    path.write_text(server + local_host("a", tmp_path / "a.log"))
    proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "collect", "--config", str(path), "--only", "a"],
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: stored_count(database, "a") == 50, timeout=90)
        path.write_text(server + local_host("b", tmp_path / "b.log"))  # a gone: this process has no share
        proc.send_signal(signal.SIGHUP)
        time.sleep(2)
        path.write_text(server + local_host("a", tmp_path / "a.log") + local_host("b", tmp_path / "b.log"))
        proc.send_signal(signal.SIGHUP)  # b belongs to another collector: not taken here
        append_lines(tmp_path / "a.log", 51, 10)
        wait_until(lambda: stored_count(database, "a") == 60, timeout=30)
        time.sleep(1)
        assert stored_count(database, "b") == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    reload_errors = [line for line in err.splitlines() if "reload refused" in line]
    assert len(reload_errors) == 1 and "--only: no host named 'a'" in reload_errors[0], err
