"""The restart protocol end to end over LocalTransport, with the fake SGLang server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from app.controller.errors import Busy, InvalidFlags, Vetoed
from tests.controller.support import MemorySinks, free_port, make_config


def test_new_flags_start_a_new_run_with_the_new_capacity(tmp_path: Path, controllers, sinks: MemorySinks) -> None:
    controller = controllers(make_config(tmp_path, free_port()), sinks=sinks)
    first = controller.begin("test", flags={"mem-fraction-static": 0.85})
    assert controller.wait(120) is first and first.outcome == "ok", first.public()
    second = controller.begin("test", preset="bf16-hicache-088")
    controller.wait(120)
    assert second.outcome == "ok", second.detail
    assert [run_id for _, run_id, _, _ in sinks.started] == [first.run_id, second.run_id]
    log = Path(sinks.started[1][3]).read_text()
    assert "max_total_num_tokens=120094" in log  # 116K at 0.85 -> 0.88
    assert "--mem-fraction-static=0.88" in log and "--enable-hierarchical-cache" in log
    assert sinks.ended[0][1] == first.run_id
    now = controller.inspect()
    assert now["running"] and now["run_id"] == second.run_id
    assert now["flags"]["hicache-size"] == 48
    assert [a.outcome for a in sinks.audits] == ["ok", "ok"]
    assert sinks.audits[1].from_flags["mem-fraction-static"] == 0.85
    assert sinks.audits[1].to_flags["mem-fraction-static"] == 0.88


def test_a_server_that_runs_out_of_memory_is_rolled_back(tmp_path: Path, controllers, sinks: MemorySinks) -> None:
    controller = controllers(make_config(tmp_path, free_port()), sinks=sinks)
    good = controller.begin("test", flags={"mem-fraction-static": 0.88})
    controller.wait(120)
    bad = controller.begin("test", flags={"mem-fraction-static": 0.93})
    controller.wait(120)
    assert good.outcome == "ok", good.public()
    assert bad.outcome == "rolled_back", bad.public()
    assert "CUDA out of memory" in bad.detail
    now = controller.inspect()
    assert now["running"] and now["flags"]["mem-fraction-static"] == 0.88
    assert now["run_id"] not in (good.run_id, bad.run_id)  # the rollback is a run of its own
    assert len(sinks.started) == 3


@pytest.mark.parametrize(("flags", "error"), [
    ({"mem-fraction-static": "lots"}, InvalidFlags),
    ({"no-such-flag": 1}, InvalidFlags),
    ({"kv-cache-dtype": "fp8_e4m3"}, Vetoed),
    ({"kv-cache": "fp8_e5m2"}, Vetoed),  # an abbreviation does not get around a veto
])
def test_refused_requests_run_nothing(tmp_path: Path, controllers, sinks: MemorySinks, flags, error) -> None:
    controller = controllers(make_config(tmp_path, free_port(), env=f"FAKE_ARGV_LOG={tmp_path}/argv"), sinks=sinks)
    with pytest.raises(error):
        controller.begin("test", flags=flags)
    assert not (tmp_path / "state").exists()  # not even the helper ran
    assert not (tmp_path / "argv").exists()
    assert sinks.started == []
    assert [a.outcome for a in sinks.audits] == ["invalid" if error is InvalidFlags else "vetoed"]


def test_two_concurrent_restarts_give_one_busy(tmp_path: Path, controllers, sinks: MemorySinks) -> None:
    controller = controllers(make_config(tmp_path, free_port()), sinks=sinks)
    controller.begin("a", flags={"mem-fraction-static": 0.85})
    with pytest.raises(Busy):
        controller.begin("b", flags={"mem-fraction-static": 0.88})
    done = controller.wait(120)
    assert done is not None
    assert done.outcome == "ok", done.public()
    assert sorted(a.outcome for a in sinks.audits) == ["busy", "ok"]


def test_two_kvwatch_processes_exclude_each_other_through_the_host_lease(tmp_path: Path, controllers) -> None:
    config = make_config(tmp_path, free_port())
    one, two = controllers(config), controllers(config)
    one.begin("a", flags={"mem-fraction-static": 0.85})
    with pytest.raises(Busy, match="another kvwatch"):
        two.begin("b", flags={"mem-fraction-static": 0.88})
    assert one.wait(120).outcome == "ok"  # type: ignore[union-attr]


def test_a_server_ignoring_sigterm_is_killed_with_its_workers(tmp_path: Path, controllers) -> None:
    controller = controllers(make_config(tmp_path, free_port(), stop_timeout=1))
    controller.begin("t", flags={"served-model-name": "ignore-term"})
    assert controller.wait(120).outcome == "ok"  # type: ignore[union-attr]
    record = json.loads((tmp_path / "state" / "current.json").read_text())
    stopped = controller.remote.stop(1)
    assert stopped["stopped"] == "kill"
    assert stopped["left"] == []  # the worker that ignored SIGTERM too
    assert stopped["port_free"]
    stat = Path(f"/proc/{record['pid']}/stat")
    assert not stat.exists() or stat.read_text().rsplit(") ", 1)[1][0] == "Z"


def test_a_port_taken_by_a_process_kvwatch_did_not_start_is_left_alone(tmp_path: Path, controllers) -> None:
    port = free_port()
    with socket.create_server(("127.0.0.1", port)) as squatter:
        controller = controllers(make_config(tmp_path, port))
        op = controller.begin("t", flags={"mem-fraction-static": 0.85})
        controller.wait(120)
        assert op.outcome == "failed"
        assert "kvwatch did not start" in op.detail
        assert squatter.fileno() != -1  # still ours, still listening: nothing was killed by pattern


def test_a_recycled_pid_in_the_record_is_never_signalled(tmp_path: Path, controllers) -> None:
    """The record names a pid that now belongs to another process: start time differs, so no signal."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state = tmp_path / "state"
        state.mkdir()
        cmdline = Path(f"/proc/{bystander.pid}/cmdline").read_bytes().split(b"\0")[:-1]
        (state / "current.json").write_text(json.dumps({
            "run_id": "old", "pid": bystander.pid, "starttime": 1, "host": "127.0.0.1", "port": 1,
            "cmdline": [part.decode() for part in cmdline]}))
        controller = controllers(make_config(tmp_path, free_port()))
        stopped = controller.remote.stop(1)
        assert stopped["stopped"].startswith("not running")
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
