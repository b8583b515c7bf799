"""The restart protocol with the simulated SGLang server as the remote process, over the real sshd:
a restart with new flags gives a new run whose log shows the new KV capacity."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvwatch.app.controller.errors import Vetoed
from tests.controller.support import MemorySinks, free_port, make_config

LAUNCHER = Path(__file__).with_name("sim_launcher.py")
CAPACITY = re.compile(r"max_total_num_tokens=(\d+)")
ROOT = Path(__file__).resolve().parents[2]


def capacity(log_path: str) -> int:
    found = CAPACITY.search(Path(log_path).read_text())
    assert found, f"no capacity line in {log_path}"
    return int(found.group(1))


@pytest.mark.sshd
def test_new_flags_give_a_new_run_with_the_new_capacity(sshd, tmp_path: Path, controllers) -> None:
    sinks, port = MemorySinks(), free_port()
    env = f"PYTHONPATH={ROOT} SIM_ARGS='--sim-speed 20 --sim-drain-timeout 5'"
    config = make_config(tmp_path, port, server=str(LAUNCHER), env=env, stop_timeout=30)
    config = config.model_copy(update={"launch": config.launch + " --tp 8 --trust-remote-code"})
    controller = controllers(config, connect=sshd.connect, sinks=sinks)
    first = controller.begin("ssh", flags={"mem-fraction-static": 0.85})
    assert controller.wait(180) is first
    assert first.outcome == "ok", first.public()
    second = controller.begin("ssh", preset="bf16-hicache-088")
    controller.wait(180)
    assert second.outcome == "ok", second.public()
    before, after = capacity(sinks.started[0][3]), capacity(sinks.started[1][3])
    print(f"capacity {before} -> {after}")
    assert after > before * 1.2  # 0.85 -> 0.88 + hierarchical cache: 116K -> 159K in the campaign
    assert controller.inspect()["run_id"] == second.run_id
    assert sinks.ended[0][1] == first.run_id
    with pytest.raises(Vetoed):
        controller.begin("ssh", preset="fp8-hicache-090")
