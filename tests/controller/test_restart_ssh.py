"""The restart protocol against a real OpenSSH server on 127.0.0.1 (fixture `sshd`), faults included.

The "remote host" is this machine seen through sshd: the helper, the server and its log live where
the SSH session puts them, and every command crosses the remote login shell, quoted.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from kvwatch.app.controller.errors import Busy, HostUnavailable, InvalidFlags, Vetoed
from kvwatch.collectors.base import ConnectFailed
from tests.controller.support import MemorySinks, free_port, instances, make_config, when_state

pytestmark = pytest.mark.sshd


class Link:
    """Connects through the real sshd; `cut()` kills the live SSH sessions, `block` refuses new ones."""

    def __init__(self, sshd) -> None:
        self.sshd = sshd
        self.block = threading.Event()
        self.connects = 0

    def connect(self):
        self.connects += 1
        if self.block.is_set():
            raise ConnectFailed("127.0.0.1: connection refused (test: link down)")
        return self.sshd.connect()

    def cut(self) -> None:
        for pid in self.sshd.session_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_new_flags_give_a_new_run_and_a_crash_is_rolled_back(sshd, tmp_path: Path, controllers) -> None:
    sinks, link, port = MemorySinks(), Link(sshd), free_port()
    controller = controllers(make_config(tmp_path, port), connect=link.connect, sinks=sinks)
    first = controller.begin("ssh", preset="bf16-hicache-088")
    assert controller.wait(120).outcome == "ok", first.detail  # type: ignore[union-attr]
    assert "max_total_num_tokens=120094" in Path(first.log_path).read_text()
    bad = controller.begin("ssh", flags={"mem-fraction-static": 0.93})
    controller.wait(120)
    assert bad.outcome == "rolled_back", bad.detail
    assert "CUDA out of memory" in bad.detail
    now = controller.inspect()
    assert now["running"]
    assert now["flags"]["mem-fraction-static"] == 0.88
    assert len(instances(port)) == 1
    assert [a.outcome for a in sinks.audits] == ["ok", "rolled_back"]
    assert len(sinks.started) == 3


def test_invalid_or_vetoed_requests_never_open_a_connection(sshd, tmp_path: Path, controllers) -> None:
    link = Link(sshd)
    controller = controllers(make_config(tmp_path, free_port()), connect=link.connect)
    with pytest.raises(InvalidFlags):
        controller.begin("ssh", flags={"served-model-name": "$(touch /tmp/kvwatch-pwned)"})
    with pytest.raises(Vetoed):
        controller.begin("ssh", preset="fp8-hicache-090")
    assert link.connects == 0


def test_two_concurrent_restarts_give_exactly_one_busy(sshd, tmp_path: Path, controllers) -> None:
    config = make_config(tmp_path, free_port())
    pair = [controllers(config, connect=Link(sshd).connect), controllers(config, connect=Link(sshd).connect)]
    gate, results = threading.Barrier(3), []

    def ask(index: int) -> None:
        gate.wait()
        try:
            pair[index // 2].begin(f"user{index}", flags={"mem-fraction-static": 0.85})
            results.append("accepted")
        except Busy:
            results.append("busy")

    threads = [threading.Thread(target=ask, args=(i,)) for i in (0, 2)]
    for thread in threads:
        thread.start()
    gate.wait()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == ["accepted", "busy"]
    for controller in pair:
        controller.wait(120)


def test_an_ssh_drop_while_waiting_is_survived(sshd, tmp_path: Path, controllers) -> None:
    sinks, link, port = MemorySinks(), Link(sshd), free_port()
    controller = controllers(make_config(tmp_path, port), connect=link.connect, sinks=sinks)
    when_state(lambda: controller.last, "waiting", link.cut)
    op = controller.begin("ssh", flags={"served-model-name": "slow"})
    controller.wait(120)
    assert op.outcome == "ok", op.public()
    assert any("lost gpu1" in message for _, message in op.steps)
    assert link.connects >= 2  # it really reconnected
    assert len(instances(port)) == 1
    assert [run_id for _, run_id, _, _ in sinks.started] == [op.run_id]


def test_an_ssh_drop_while_starting_never_gives_two_servers(sshd, tmp_path: Path, controllers) -> None:
    sinks, link, port = MemorySinks(), Link(sshd), free_port()
    controller = controllers(make_config(tmp_path, port), connect=link.connect, sinks=sinks)
    controller.begin("ssh", flags={"mem-fraction-static": 0.85})
    controller.wait(120)
    when_state(lambda: controller.last, "starting", link.cut)
    op = controller.begin("ssh", flags={"mem-fraction-static": 0.88})
    controller.wait(120)
    assert op.outcome == "ok", op.public()
    assert any("lost gpu1 while starting" in message for _, message in op.steps), op.steps
    assert len(instances(port)) == 1
    assert controller.inspect()["run_id"] == op.run_id
    assert [run_id for _, run_id, _, _ in sinks.started].count(op.run_id) == 1


def test_a_host_gone_too_long_is_interrupted_and_left_consistent(sshd, tmp_path: Path, controllers) -> None:
    sinks, link, port = MemorySinks(), Link(sshd), free_port()
    controller = controllers(make_config(tmp_path, port), connect=link.connect, sinks=sinks, reconnect_window=2.0)

    def outage() -> None:
        link.block.set()
        link.cut()

    when_state(lambda: controller.last, "waiting", outage)
    op = controller.begin("ssh", flags={"served-model-name": "slow"})
    controller.wait(120)
    assert op.outcome == "interrupted", op.public()
    assert [a.outcome for a in sinks.audits] == ["interrupted"]
    link.block.clear()
    state = json.loads((tmp_path / "state" / "current.json").read_text())
    assert state["run_id"] == op.run_id  # the host's record says what runs there
    assert len(instances(port)) == 1
    again = controller.begin("ssh", flags={"mem-fraction-static": 0.88})  # reclaims its own stale lease
    controller.wait(120)
    assert again.outcome == "ok", again.detail
    assert len(instances(port)) == 1


def test_metacharacters_in_the_launch_line_cross_the_remote_shell_as_data(sshd, tmp_path: Path, controllers) -> None:
    pwned, marker = tmp_path / "pwned", tmp_path / "argv"
    value = f"a;touch {pwned}|$(touch {pwned})`touch {pwned}`'\"*&&touch {pwned}"
    config = make_config(tmp_path, free_port(), env=f"FAKE_ARGV_LOG={marker}")
    quoted = "'" + value.replace("'", "'\"'\"'") + "'"
    config = type(config)(host=config.host, launch=f"{config.launch} --served-model-name {quoted}",
                          presets=config.presets, vetoes=config.vetoes, restart=config.restart)
    controller = controllers(config, connect=Link(sshd).connect)
    controller.begin("owner", flags={"decode-log-interval": 10})
    assert controller.wait(120).outcome == "ok"  # type: ignore[union-attr]
    assert f"--served-model-name={value}" in json.loads(marker.read_text().splitlines()[0])
    assert not pwned.exists()


def test_reading_flags_from_a_host_without_sglang_is_503(sshd, tmp_path: Path, controllers) -> None:
    config = make_config(tmp_path, free_port(), flags_schema="remote")
    controller = controllers(config, connect=Link(sshd).connect)
    with pytest.raises(HostUnavailable, match="sglang is not installed"):
        controller.begin("ssh", flags={"mem-fraction-static": 0.85})
