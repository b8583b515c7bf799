"""A host's `gpu_interval` (kvwatch.toml) is the interval of the nvidia-smi loop the collector runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kvwatch.app.build import build_services
from kvwatch.app.bus import EventBus
from kvwatch.app.commands.collect import collected
from kvwatch.app.config import HostConfig, load_config
from kvwatch.app.pipeline.collector import HostCollector
from kvwatch.app.store import open_store


def _recording_nvidia_smi(bin_dir: Path, argv_file: Path) -> None:
    """Writes its arguments down, then prints a sample of GPU 0 every 0.2 s."""
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(f'#!/bin/sh\necho "$@" > {argv_file}\n'
                      "while true; do echo '2026/12/02 14:53:08.174, 0, 50, 1, 2, 3, 4'; sleep 0.2; done\n")
    script.chmod(0o755)


def _host(tmp_path: Path, extra: str) -> HostConfig:
    (tmp_path / "server.log").touch()
    path = tmp_path / "kvwatch.toml"
    path.write_text(f"[server]\ndata_dir = '{tmp_path}'\n[[hosts]]\nname = 'gpu1'\nssh = 'local'\n"
                    f"server_log = '{tmp_path / 'server.log'}'\ngpu = true\n{extra}")
    return load_config(path).hosts[0]


@pytest.mark.parametrize(("extra", "lms"), [("", "1000"), ("gpu_interval = '2.5s'\n", "2500"),
                                            ("gpu_interval = 10\n", "10000")])
def test_the_gpu_loop_samples_at_the_hosts_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    extra: str, lms: str) -> None:
    argv_file = tmp_path / "nvidia-smi.argv"
    _recording_nvidia_smi(tmp_path / "bin", argv_file)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    host = _host(tmp_path, extra)
    assert host.gpu_interval == int(lms) / 1000
    collector = HostCollector(host, open_store(str(tmp_path / "kvwatch.db")), EventBus(), HostConfig.open_transport)
    collector.start()
    try:
        deadline = time.monotonic() + 20
        while not (argv_file.exists() and argv_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        argv = argv_file.read_text().split()
    finally:
        collector.stop()
    assert argv[argv.index("-lms") + 1] == lms, argv


def _fleet_config(tmp_path: Path, hosts: int, table: str = "") -> Path:
    (tmp_path / "server.log").touch()
    lines = [f"[server]\ndata_dir = '{tmp_path}'\n"]
    for i in range(hosts):
        lines.append(f"[[hosts]]\nname = 'gpu{i}'\nssh = 'local'\nserver_log = '{tmp_path / 'server.log'}'\n"
                     f"gpu = true\n{table if i == 0 else ''}")
    path = tmp_path / "kvwatch.toml"
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize(("hosts", "table", "first", "others"), [
    (64, "", 1.0, 1.0),  # up to 64 hosts a process: every second
    (65, "", 5.0, 5.0),  # more: every 5 s where the host's table does not say
    (65, "gpu_interval = 1\n", 1.0, 5.0),  # a host that names its interval keeps it
])
def test_an_unset_gpu_interval_follows_how_many_hosts_the_process_collects(
        tmp_path: Path, hosts: int, table: str, first: float, others: float) -> None:
    config = load_config(_fleet_config(tmp_path, hosts, table))
    assert config.hosts[1].gpu_interval == 1.0  # the table's value reads as before
    services = build_services(config, controllers=False)
    try:
        sampled = [c.options.gpu_sample_s for c in services.collectors.values()]
    finally:
        services.stop()
    assert sampled[0] == first and set(sampled[1:]) == {others}


def test_collect_only_decides_by_the_hosts_it_collects(tmp_path: Path) -> None:
    config = collected(load_config(_fleet_config(tmp_path, 65)), ",".join(f"gpu{i}" for i in range(10)))
    services = build_services(config, controllers=False, web=False)
    try:
        assert {c.options.gpu_sample_s for c in services.collectors.values()} == {1.0}
    finally:
        services.stop()
