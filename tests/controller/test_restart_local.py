"""The restart protocol end to end over LocalTransport, with the fake SGLang server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvwatch.app.controller.errors import Busy, HostUnavailable, InvalidFlags, RateLimited, Vetoed
from tests.controller.support import MemorySinks, free_port, make_config, record_recycled_pid


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
        record_recycled_pid(tmp_path / "state", bystander.pid)
        controller = controllers(make_config(tmp_path, free_port()))
        stopped = controller.remote.stop(1)
        assert stopped["stopped"].startswith("not running")
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.parametrize(("name", "why"), [("never-ready", "not ready after 3 s"),
                                            ("exit-early", "the server exited before it was ready")])
def test_a_server_that_never_gets_ready_is_rolled_back(tmp_path: Path, controllers, name: str, why: str) -> None:
    controller = controllers(make_config(tmp_path, free_port(), ready_timeout=3))
    controller.begin("t", flags={"mem-fraction-static": 0.85})
    controller.wait(120)
    op = controller.begin("t", flags={"served-model-name": name})
    controller.wait(120)
    assert op.outcome == "rolled_back", op.detail
    assert op.detail.startswith(why)
    assert controller.inspect()["flags"]["mem-fraction-static"] == 0.85


def test_the_restart_loop_cap_refuses_with_429(tmp_path: Path, controllers, sinks: MemorySinks) -> None:
    controller = controllers(make_config(tmp_path, free_port(), max_restarts=2), sinks=sinks)
    controller.begin("t", flags={"mem-fraction-static": 0.93})  # fails, and its rollback counts too
    controller.wait(120)
    with pytest.raises(RateLimited) as limited:
        controller.begin("t", flags={"mem-fraction-static": 0.85})
    assert 0 < limited.value.retry_after <= 600
    assert [a.outcome for a in sinks.audits][-1] == "rate_limited"


def test_a_helper_that_fails_on_the_host_ends_the_restart_without_waiting(tmp_path: Path, controllers) -> None:
    (tmp_path / "afile").write_text("not a directory")
    controller = controllers(make_config(tmp_path, free_port(), log_dir=f"{tmp_path}/afile/logs"))
    started = time.monotonic()
    op = controller.begin("t", flags={"mem-fraction-static": 0.85})
    controller.wait(120)
    assert op.outcome == "failed"
    assert "helper start failed" in op.detail
    assert "NotADirectoryError" in op.detail
    assert time.monotonic() - started < 60  # not the 120 s reconnect window: the host did answer


def test_an_unusable_state_dir_is_503_before_anything_runs(tmp_path: Path, controllers) -> None:
    (tmp_path / "afile").write_text("not a directory")
    controller = controllers(make_config(tmp_path, free_port(), state_dir=f"{tmp_path}/afile/state"))
    with pytest.raises(HostUnavailable, match="helper lease failed"):
        controller.begin("t", flags={"mem-fraction-static": 0.85})
    assert controller.last is None


def _wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def test_a_server_started_by_hand_is_adopted_then_restarted(
    tmp_path: Path, controllers, sinks: MemorySinks
) -> None:
    port = free_port()
    config = make_config(tmp_path, port)
    controller = controllers(config, sinks=sinks)
    by_hand = subprocess.Popen(
        [*controller.launch().argv(controller.schema(), controller.launch().flags)],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        _wait_port(port)
        not_leader = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with pytest.raises(HostUnavailable, match="does not lead its own process group"):
            controller.adopt(not_leader.pid, str(tmp_path / "hand.log"))
        not_leader.kill()
        not_leader.wait()
        controller.adopt(by_hand.pid, str(tmp_path / "hand.log"))
        operation = controller.begin("test", flags={"mem-fraction-static": 0.85})
        assert controller.wait(120) is operation and operation.outcome == "ok", operation.public()
        assert by_hand.wait(30) is not None  # the adopted server was stopped by the restart
    finally:
        if by_hand.poll() is None:
            by_hand.kill()
            by_hand.wait()


def test_an_outcome_is_shown_only_once_the_next_restart_can_begin(tmp_path: Path, controllers) -> None:
    """A campaign's next step (or a person) acts the moment an operation shows its outcome; before, the
    outcome showed while the host's lease was still being released, and that restart got 409 Busy."""
    controller = controllers(make_config(tmp_path, free_port()))
    first = controller.begin("a", flags={"mem-fraction-static": 0.85})
    deadline = time.monotonic() + 120
    while first.outcome is None:
        assert time.monotonic() < deadline, first.public()
        time.sleep(0.001)
    assert not controller.busy
    assert json.loads((tmp_path / "state" / "current.json").read_text())["run_id"] == first.run_id
    assert not (tmp_path / "state" / "lease").exists()
    second = controller.begin("b", flags={"mem-fraction-static": 0.88})
    assert controller.wait(120) is second and second.outcome == "ok", second.public()


def _lease_held_by(state: Path, owner: str) -> None:
    (state / "lease").mkdir(parents=True)
    held = {"op_id": "left-behind", "at": time.time(), "lease_s": 3600.0, "pid": 1, "owner": owner}
    (state / "lease" / "owner.json").write_text(json.dumps(held))


def test_a_lease_left_by_a_kvwatch_that_ended_on_this_machine_is_taken_at_once(tmp_path: Path, controllers) -> None:
    """kill -9 of kvwatch while it restarted leaves the host's lease for an hour; a kvwatch started
    again on the same machine sees that the holder's process is gone and takes it."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    _lease_held_by(tmp_path / "state", f"{socket.gethostname()}:{ended.pid}")
    controller = controllers(make_config(tmp_path, free_port()))
    op = controller.begin("again", flags={"mem-fraction-static": 0.85})
    assert controller.wait(120) is op and op.outcome == "ok", op.public()


@pytest.mark.parametrize("owner", ["another machine", "alive here", "unnamed"])
def test_a_lease_held_by_a_live_or_unknown_kvwatch_is_respected(tmp_path: Path, controllers, owner: str) -> None:
    named = {"another machine": "another-machine.example:12345", "unnamed": "",
             "alive here": f"{socket.gethostname()}:{os.getpid()}"}
    _lease_held_by(tmp_path / "state", named[owner])
    controller = controllers(make_config(tmp_path, free_port()))
    with pytest.raises(Busy, match="another kvwatch is restarting this host"):
        controller.begin("b", flags={"mem-fraction-static": 0.85})
    assert json.loads((tmp_path / "state" / "lease" / "owner.json").read_text())["op_id"] == "left-behind"
