"""The command line: help for every command, and one-line errors instead of tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kvwatch.app.cli import COMMANDS


def kvwatch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvwatch.app", *args], capture_output=True, text=True, timeout=180, cwd=cwd, check=False
    )


@pytest.mark.parametrize("command", sorted(c.NAME for c in COMMANDS))
def test_every_command_has_help(command: str) -> None:
    done = kvwatch(command, "--help")
    assert done.returncode == 0
    assert f"usage: kvwatch {command}" in done.stdout


def test_documented_commands_exist() -> None:
    assert {"demo", "serve"} <= {c.NAME for c in COMMANDS}


def test_missing_config_is_one_line(tmp_path: Path) -> None:
    done = kvwatch("serve", "--config", str(tmp_path / "nope.toml"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"kvwatch: error: {tmp_path / 'nope.toml'}: config file not found"]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[server\nport = 1", "not valid TOML"),
        ("[server]\nport = 'x'", "server.port: expected int"),
        ("[server]\nprot = 1", "server.prot: unknown key"),
        ("[[hosts]]\nname = 'a'\nssh = 'local'", "hosts['a'].server_log: missing"),
        ("[[hosts]]\nname = 'a'\nssh = 'local'\nserver_log = 'x'\noutputs = 'y'", "hosts['a'].outputs"),
    ],
)
def test_bad_config_is_one_line_naming_the_field(tmp_path: Path, text: str, names: str) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text(text)
    done = kvwatch("serve", "--config", str(path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and names in lines[0], done.stderr


def test_public_bind_without_token_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text("[server]\nhost = '0.0.0.0'\n")
    done = kvwatch("serve", "--config", str(path))
    assert done.returncode == 2
    assert "refusing to bind 0.0.0.0 without a token" in done.stderr
