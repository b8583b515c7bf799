"""A host's `gpu_interval` (kvwatch.toml) is the interval of the nvidia-smi loop the collector runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kvwatch.app.bus import EventBus
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
