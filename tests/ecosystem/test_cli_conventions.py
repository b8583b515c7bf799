"""Conventions scripts rely on: documented exit codes, plain log lines, `kvwatch init` from ~/.ssh/config."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvwatch.app.cli import main
from kvwatch.app.commands import init as init_command
from kvwatch.app.commands.serve import resolve_config
from kvwatch.app.config import load_config
from tests.ecosystem.processes import Kvwatch, wait_for

SSH_CONFIG = """\
Host *
    ServerAliveInterval 30

Host gpu1 gpu2
    HostName 10.1.230.174
    User root

Host "h100 box"
    HostName 10.1.230.175
    Port 2222

Host *.internal !bastion
    User ops
"""


def test_help_documents_the_exit_codes() -> None:
    done = subprocess.run([sys.executable, "-m", "kvwatch.app", "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    for code, meaning in (("0", "success"), ("1", "runtime failure"), ("2", "usage or config error"),
                          ("130", "interrupted")):
        assert any(line.split()[:1] == [code] and meaning in line for line in done.stdout.splitlines()), code
    assert "kvwatch init" in done.stdout and "XDG_CONFIG_HOME" in done.stdout


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["report", "--bogus"])
    assert raised.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_unexpected_failure_exits_1_with_a_traceback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(init_command, "run", broken)  # the CLI looks each command's run() up at start
    assert main(["init"]) == 1
    [record] = [r for r in caplog.records if r.name == "kvwatch"]
    assert record.levelname == "ERROR" and record.getMessage() == "unexpected failure"
    assert record.exc_info is not None and str(record.exc_info[1]) == "disk on fire"  # the traceback is logged


def test_interrupt_exits_130_and_sigterm_exits_0(tmp_path: Path) -> None:
    config = tmp_path / "kvwatch.toml"
    config.write_text(f'[server]\ndata_dir = "{tmp_path}"\n\n[[hosts]]\nname = "a"\nssh = "local"\n'
                      f'server_log = "{tmp_path}/server.log"\n')
    for signum, expected in ((signal.SIGINT, 130), (signal.SIGTERM, 0)):
        process = Kvwatch(f"collect-{signum}", ["collect", "--config", str(config)], tmp_path)
        try:
            wait_for(lambda p=process: "collecting 1 hosts" in p.stderr, 60, "the collector to start", [process])
            time.sleep(0.5)
            assert process.signal(signum) == expected, process.stderr
        finally:
            process.stop()


def test_init_writes_a_config_serve_can_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ssh_config").write_text(SSH_CONFIG)
    out = tmp_path / "kvwatch.toml"
    assert main(["init", "--ssh-config", str(tmp_path / "ssh_config"), "-o", str(out)]) == 0
    config = load_config(out)
    assert [(h.name, h.ssh) for h in config.hosts] == [("gpu1", "gpu1"), ("gpu2", "gpu2"), ("h100 box", "h100 box")]
    text = out.read_text()
    assert "# root@10.1.230.174:22" in text and "# 10.1.230.175:2222" in text  # what each alias resolves to
    assert "*.internal" not in text and "bastion" not in text  # patterns are not hosts
    assert "wrote" in capsys.readouterr().err


def test_init_never_overwrites_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kvwatch.toml"
    out.write_text("# my hand-written config\n")
    args = ["init", "--ssh-config", str(tmp_path / "none"), "-o", str(out)]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == f"kvwatch: error: {out}: already exists; pass --force to overwrite it"
    assert out.read_text() == "# my hand-written config\n"
    assert main([*args, "--force"]) == 0
    assert load_config(out).hosts == ()  # no ssh config: a commented example host, nothing active
    assert "# [[hosts]]" in out.read_text()
    assert list(tmp_path.iterdir()) == [out]  # no temp file left behind


def test_init_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ssh_config").write_text(SSH_CONFIG)
    assert main(["init", "--ssh-config", str(tmp_path / "ssh_config"), "--stdout"]) == 0
    assert 'name = "gpu2"' in capsys.readouterr().out


def test_config_discovery_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "kvwatch").mkdir(parents=True)
    (xdg / "kvwatch" / "kvwatch.toml").write_text('[server]\nport = 9001\n')
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert resolve_config(None).server.port == 9001  # no ./kvwatch.toml: the XDG one
    (work / "kvwatch.toml").write_text('[server]\nport = 9002\n')
    assert resolve_config(None).server.port == 9002  # ./kvwatch.toml first
    (work / "kvwatch.toml").unlink()
    (xdg / "kvwatch" / "kvwatch.toml").unlink()
    assert main(["report"]) == 2
    assert "no config: pass --config FILE, create ./kvwatch.toml, or run `kvwatch init`" in capsys.readouterr().err
