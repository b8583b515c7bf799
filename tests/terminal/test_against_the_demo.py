"""`kvwatch status` and `kvwatch wait` as processes against a running `kvwatch demo`."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.web import free_port
from tests.terminal.demo import REPO, SPEED, Demo, kvwatch, running_demo, wait_until

CONTRACT_KEYS = {"host", "run", "gen_throughput", "token_usage", "running_req", "queue_req", "completions",
                 "completion_rate", "eta_s", "alerts", "verdict", "as_of"}
SERIES_KEYS = ("gen_throughput", "token_usage", "running_req", "queue_req", "completions", "completion_rate")
VERDICTS = {"kv_bound", "client_bound", "concurrency_capped", "prefill_bound", "retracting", "degraded",
            "hicache_idle", "client_stalled", "client_buffered", "starting", "idle", "unknown"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    with running_demo(tmp_path_factory.mktemp("demo")) as running:
        # The story's last run (0.88 + hicache after the fp8 veto) is on, with decode lines, completions
        # and a client progress line stored.
        wait_until(running, lambda: len(running.get("/api/runs?host=demo")) == 4 and all(
            _status(running).get(k) is not None for k in ("token_usage", "completions", "client")
        ) and _status(running)["run"]["flags"].get("mem-fraction-static") == 0.88, "the saturating run's numbers")
        yield running


def _status(demo: Demo) -> dict[str, Any]:
    answer: dict[str, Any] = demo.get("/api/hosts/demo/status")
    return answer


def _diagnosis_verdict(demo: Demo) -> str | None:
    """What `verdict` must be: null while this kvwatch has no diagnosis route."""
    try:
        return str(demo.get("/api/hosts/demo/diagnosis")["verdict"])
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        return None


def test_status_json_has_every_field_and_the_numbers_of_the_series(demo: Demo) -> None:
    done = kvwatch("status", "--host", "demo", "--json", "--flags", "all", "--url", demo.url)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert isinstance(status, dict) and set(status) >= CONTRACT_KEYS
    assert status["host"] == "demo"
    current = demo.get("/api/runs?host=demo")[-1]
    assert status["run"]["id"] == current["id"] and status["run"]["flags"] == current["flags"]
    assert status["run"]["flags"]["mem-fraction-static"] == 0.88
    assert {"gen_throughput", "token_usage", "running_req", "queue_req"} <= set(status["sampled_at"])
    for metric in SERIES_KEYS:
        if metric not in status["sampled_at"]:  # no value to report yet: null, never a guess
            assert status[metric] is None, metric
            continue
        # The series' newest instant in a window ending at the sample the status reports is that
        # sample's. SGLang stamps whole seconds, so one instant can hold several samples (a prefill and
        # a decode line): the status' value is one of those the series holds at that instant.
        t = status["sampled_at"][metric]
        series = demo.get(f"/api/series?host=demo&metric={metric}&since={t - 30}&until={t}")
        assert series["points"][-1][0] == t, metric
        at_t = [v for when, v in series["points"] if when == t]
        assert any(v == pytest.approx(status[metric], rel=1e-12) for v in at_t), (metric, status[metric], at_t)
    assert 0 <= status["token_usage"] <= 1 and status["running_req"] >= 0 and status["gen_throughput"] >= 0
    assert status["completions"] == sum(status["completions_by_dataset"].values())
    assert status["eta_s"] is None or status["eta_s"] > 0
    assert status["verdict"] == _diagnosis_verdict(demo)
    assert status["verdict"] is None or status["verdict"] in VERDICTS
    assert all(a["state"] in ("pending", "firing", "clearing") for a in status["alerts"])
    assert abs(status["as_of"] - time.time()) < 60


def test_status_json_holds_the_runs_non_default_flags_unless_all_are_asked(demo: Demo) -> None:
    trimmed = kvwatch("status", "--host", "demo", "--json", "--url", demo.url)
    everything = kvwatch("status", "--host", "demo", "--json", "--flags", "all", "--url", demo.url)
    assert trimmed.returncode == 0 and everything.returncode == 0, (trimmed.stderr, everything.stderr)
    status, full = json.loads(trimmed.stdout), json.loads(everything.stdout)
    current = demo.get("/api/runs?host=demo")[-1]
    assert status["run"]["id"] == current["id"] and set(status) >= CONTRACT_KEYS
    flags = status["run"]["flags"]
    assert flags["mem-fraction-static"] == 0.88 and flags["enable-hierarchical-cache"] is True
    assert "model-path" not in flags and len(flags) < 20 < len(current["flags"])
    assert all(current["flags"][name] == value for name, value in flags.items())
    assert full["run"]["flags"] == current["flags"]
    assert len(trimmed.stdout) < len(everything.stdout) / 4


def test_status_json_without_host_is_a_list_of_the_same_objects(demo: Demo) -> None:
    done = kvwatch("status", "--json", "--url", demo.url)
    assert done.returncode == 0, done.stderr
    statuses = json.loads(done.stdout)
    assert isinstance(statuses, list) and [s["host"] for s in statuses] == ["demo"]
    assert set(statuses[0]) >= CONTRACT_KEYS


def test_plain_status_is_one_block_without_escape_codes(demo: Demo) -> None:
    env = {**os.environ, "KVWATCH_URL": demo.url}  # the URL from the environment this time
    done = kvwatch("status", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("demo  as of ") and "collector up" in lines[0]
    run_id = demo.get("/api/runs?host=demo")[-1]["id"]
    assert lines[1].startswith(f"  run      {run_id}  running for ")
    assert lines[2].startswith("  config   ") and "--mem-fraction-static 0.88" in lines[2]
    assert "--enable-hierarchical-cache" in lines[2] and "--model-path" not in lines[2]
    assert lines[3].startswith("  server   ") and "  KV 0." in lines[3]
    # the demo's run is minutes old: its mean covers its life so far, or the last 5 minutes
    assert " tok/s (mean over " in lines[3] or " tok/s (5-min mean " in lines[3]
    assert any(line.startswith("  client   ") for line in lines)
    outputs = next(line for line in lines if line.startswith("  outputs  "))
    assert "B2_opencodeinstruct" in outputs or "B6" in outputs
    assert any(line.startswith("  alerts   ") for line in lines)
    assert "\x1b" not in done.stdout


def test_watch_redraws_in_place_on_a_terminal(demo: Demo) -> None:
    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "status", "--watch", "0.5", "--url", demo.url],
                            stdin=terminal, stdout=terminal, stderr=terminal, cwd=REPO, env={**env, "TERM": "xterm"},
                            start_new_session=True)
    os.close(terminal)
    try:
        screen = _read_until(controller, lambda text: text.count("\x1b[H") >= 4, timeout=60)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
    assert screen.startswith("\x1b[2J\x1b[H") and screen.count("\x1b[2J") == 1
    frames = screen.split("\x1b[H")[1:4]  # three whole frames (a fourth has begun)
    assert all("  server   " in frame and frame.endswith("\x1b[J") for frame in frames)
    assert "\x1b[1mdemo\x1b[0m  as of " in frames[0]  # colour on a terminal
    assert "\x1b[K\r\n" in frames[0]  # each line cleared to its end (the pty turns \n into \r\n)


def test_watch_on_a_pipe_prints_one_json_document_a_line(demo: Demo) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "status", "--host", "demo", "--json", "--watch",
                             "0.5", "--url", demo.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)
    try:
        assert proc.stdout is not None
        documents = [json.loads(proc.stdout.readline()) for _ in range(3)]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert [d["host"] for d in documents] == ["demo"] * 3
    assert documents[0]["as_of"] < documents[1]["as_of"] < documents[2]["as_of"]


def test_a_reader_that_stops_reading_ends_the_watch_quietly(demo: Demo) -> None:
    # `kvwatch status --watch 0.2 | head -3`
    proc = subprocess.Popen([sys.executable, "-m", "kvwatch.app", "status", "--watch", "0.2", "--url", demo.url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None and proc.stderr is not None
    first = [proc.stdout.readline() for _ in range(3)]
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0
    assert first[0].startswith("demo  as of ") and proc.stderr.read() == ""


def _read_until(fd: int, done: Any, timeout: float) -> str:
    text, deadline = "", time.monotonic() + timeout
    while not done(text):
        assert time.monotonic() < deadline, f"the watch drew only this in {timeout} s:\n{text!r}"
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            text += os.read(fd, 65536).decode(errors="replace")
    return text


def test_wait_until_ready_and_until_steady(demo: Demo) -> None:
    ready = kvwatch("wait", "--host", "demo", "--until", "ready", "--timeout", "60", "--url", demo.url)
    assert ready.returncode == 0, ready.stderr
    assert ready.stdout.startswith("demo  as of ")
    started = time.monotonic()
    steady = kvwatch("wait", "--host", "demo", "--until", "steady", "--timeout", "240", "--json", "--url", demo.url,
                     timeout=300)
    waited = time.monotonic() - started
    assert steady.returncode == 0, (steady.stderr, waited)
    run_id = json.loads(steady.stdout)["run"]["id"]
    window = demo.get(f"/api/runs/{run_id}/steady")
    # the demo's own minimum ([hosts.compare] min_steady: 2 minutes of its story, shorter than the default)
    assert window["min_steady_s"] == pytest.approx(120 / SPEED)
    assert window["min_steady_s"] < window["default_min_steady_s"]
    assert window["status"] == "steady" and window["duration_s"] >= window["min_steady_s"]
    compared = demo.get(f"/api/compare?runs={run_id}")  # what the wait was for: compare has a number
    assert compared["runs"][0]["steady"]["status"] == "steady"


def test_wait_until_steady_then_compare_fills_every_row(demo: Demo) -> None:
    # The README's recipe: `kvwatch wait --until steady && kvwatch compare`, here on the demo's store
    # read without its config (the demo's 2-minute minimum is what its kvwatch recorded there).
    steady = kvwatch("wait", "--host", "demo", "--until", "steady", "--timeout", "240", "--json", "--url", demo.url,
                     timeout=300)
    assert steady.returncode == 0, steady.stderr
    run_id = json.loads(steady.stdout)["run"]["id"]
    done = kvwatch("compare", "--workdir", str(demo.world), "--runs", run_id, "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["runs"][0]["steady"]["status"] == "steady", result["runs"][0]["steady"]
    assert {row["metric"]: row["values"][0] for row in result["rows"] if row["values"][0] is None} == {}
    table = kvwatch("compare", "--workdir", str(demo.world), "--runs", run_id)
    assert table.returncode == 0 and "not enough steady data" not in table.stdout, table.stdout


def test_wait_until_the_token_usage_alert_fires(demo: Demo) -> None:
    done = kvwatch("wait", "--host", "demo", "--until", "alert=token_usage_high", "--timeout", "120", "--json",
                   "--url", demo.url, timeout=180)
    assert done.returncode == 0, done.stderr
    alerts = json.loads(done.stdout)["alerts"]
    assert {"rule": "token_usage_high", "state": "firing"}.items() <= next(
        a for a in alerts if a["rule"] == "token_usage_high").items()


def test_wait_times_out_with_124_at_its_timeout(demo: Demo) -> None:
    started = time.monotonic()
    done = kvwatch("wait", "--host", "demo", "--until", "completions>=100000000", "--timeout", "3",
                   "--interval", "1", "--url", demo.url)
    elapsed = time.monotonic() - started
    assert done.returncode == 124, done.stderr
    assert 3 <= elapsed < 20
    assert done.stderr.startswith("kvwatch wait: timed out after 3 s waiting for completions>=100000000 (completions: ")
    assert done.stdout == ""


def test_wait_usage_errors_exit_2(demo: Demo) -> None:
    bad = kvwatch("wait", "--host", "demo", "--until", "stable", "--url", demo.url)
    assert bad.returncode == 2 and "expected steady, ready, alert, alert=RULE or completions>=N" in bad.stderr
    unknown = kvwatch("wait", "--host", "gpu9", "--until", "ready", "--url", demo.url)
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == f"kvwatch: error: --host: no host named 'gpu9' at {demo.url} (hosts: demo)"
    assert kvwatch("wait", "--until", "ready", "--url", demo.url).returncode == 2  # --host is required


def test_unreachable_kvwatch_exits_1() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for args in (["wait", "--host", "demo", "--until", "ready", "--timeout", "5"], ["status"]):
        done = kvwatch(*args, "--url", url)
        assert done.returncode == 1, done
        assert done.stderr.startswith(f"kvwatch: error: cannot reach kvwatch at {url}: ")
