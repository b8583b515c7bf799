"""Each `kvwatch demo` keeps its controller's record, lease and last good flags in its own workdir.
Under the default (~/.kvwatch/demo) every demo on the machine shared one record: a second demo's page
showed the first one's server (its run, pid and port, the port then refused as a guarded change)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from kvwatch.app.commands.demo import demo_config
from kvwatch.app.config import Config
from kvwatch.app.controller.policy import controller_config


def world(root: Path) -> SimpleNamespace:
    """What demo_config reads of a started DemoWorld (its files and launch line), without starting one."""
    return SimpleNamespace(server_log=root / "logs" / "sglang_inference.log", client_log=root / "logs" / "client.log",
                           outputs_glob=str(root / "prepared" / "*" / "raw_responses.jsonl"), target_completions=8000,
                           launch=f"python -m kvwatch.simulator.server --model-path /models/Kimi-K2.5 --port {9000}",
                           bin_dir=None, speed=1.0)


def state_dir(root: Path) -> str:
    host = demo_config(world(root), root).hosts[0]
    config = controller_config(host, Config(hosts=(host,)))
    assert config is not None
    return config.state_dir


def test_two_demos_keep_their_controllers_apart(tmp_path: Path) -> None:
    first, second = state_dir(tmp_path / "one"), state_dir(tmp_path / "two")
    assert first != second
    assert Path(first).is_relative_to(tmp_path / "one") and Path(second).is_relative_to(tmp_path / "two")
