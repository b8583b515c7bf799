"""kvwatch.toml is one typed tree validated whole when it is read (issue #32): a typo in any host
sub-table stops the load with file, line and key path; the transport is a key; `kvwatch config check`
prints the resolved tree with its secrets masked, or the error (exit 2)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from kvwatch.app.cli import main
from kvwatch.app.config import load_config, parse_config
from kvwatch.app.config.lines import KeyLines
from kvwatch.app.errors import ConfigError

HOSTS = """\
[server]
port = 8765

[[hosts]]
name = "gpu0"
ssh = "local"
server_log = "/logs/gpu0.log"

[[hosts]]
name = "gpu1"
ssh = "root@10.0.0.1"
server_log = "/logs/gpu1.log"
launch = "python3 -m sglang.launch_server --model-path /m"
"""  # 13 lines: a sub-table appended below starts at line 14, its first key at line 15


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kvwatch.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(("table", "message"), [
    ("[hosts.compare]\nmin_stady = 90\n", "hosts['gpu1'].compare.min_stady: unknown setting (allowed: min_steady)"),
    ('[hosts.campaign]\npresets = ["a"]\nbudget = "1h"\n', "hosts['gpu1'].campaign.budget: unknown setting"),
    ("[hosts.restart]\nstop_timout = 5\n", "hosts['gpu1'].restart: unknown key(s) stop_timout"),
    ("[hosts.alerts.token_usage_high]\nfire_att = 0.9\n",
     "hosts['gpu1'].alerts.token_usage_high.fire_att: unknown setting"),
])
def test_a_typo_in_a_host_sub_table_stops_the_load_with_line_and_key_path(
    tmp_path: Path, table: str, message: str
) -> None:
    path = write(tmp_path, HOSTS + table)
    line = 16 if "budget" in table else 15  # the typo'd key's own line
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}:{line}: {message}"), str(caught.value)


def test_a_bad_value_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, HOSTS + "[hosts.compare]\nmin_steady = []\n")
    with pytest.raises(ConfigError, match=rf"^{path}:15: hosts\['gpu1'\]\.compare\.min_steady: expected a duration"):
        load_config(path)
    path = write(tmp_path, HOSTS.replace("port = 8765", "port = 0"))
    with pytest.raises(ConfigError, match=rf"^{path}:2: server\.port: 0 is not a TCP port"):
        load_config(path)


def test_a_missing_key_names_its_table_header(tmp_path: Path) -> None:
    path = write(tmp_path, HOSTS.replace('server_log = "/logs/gpu1.log"\n', ""))
    with pytest.raises(ConfigError, match=rf"^{path}:9: hosts\['gpu1'\]\.server_log: missing \(required\)"):
        load_config(path)


def test_the_lines_of_lists_of_tables_count_as_toml_does() -> None:
    text = HOSTS + "[[hosts.vetoes]]\nflag = 'a'\n[[hosts.vetoes]]\nflag = 'b'\n[alerts.retractions]\nwindow = 5\n"
    lines = KeyLines(text)
    assert lines(("hosts", 0, "ssh")) == 6 and lines(("hosts", 1, "ssh")) == 11
    assert lines(("hosts", 1, "vetoes", 1, "flag")) == 17
    assert lines(("hosts", 1, "vetoes", 1, "reason")) == 16  # not in the file: its table's header
    assert lines(("alerts", "retractions", "window")) == 19
    assert lines(("nowhere",)) is None


def test_the_transport_is_a_key_defaulting_as_before() -> None:
    def host(**keys: str) -> dict[str, str]:
        return {"name": "a", "server_log": "/l", **keys}

    config = parse_config({"hosts": [host(ssh="local"), host(name="b", ssh="u@h"),
                                     host(name="c", ssh="this box", transport="local")]})
    assert [(h.transport, h.is_local) for h in config.hosts] == [("local", True), ("ssh", False), ("local", True)]


def test_an_unknown_transport_lists_the_allowed_ones(tmp_path: Path) -> None:
    path = write(tmp_path, HOSTS.replace('ssh = "root@10.0.0.1"', 'ssh = "root@10.0.0.1"\ntransport = "telnet"'))
    with pytest.raises(ConfigError, match=rf"^{path}:12: hosts\['gpu1'\]\.transport: unknown transport 'telnet' "
                                          r"\(allowed: local, ssh\)"):
        load_config(path)


SECRETS = """\
[server]
token = "s3cret-token-value"
webhook = "https://hooks.example/T000/B000/abcdef"
database = "postgresql://kv:hunter2@db.internal/kvwatch"
"""


def test_config_check_prints_the_resolved_config_with_secrets_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = HOSTS.replace("[server]\nport = 8765\n", "")
    path = write(tmp_path, SECRETS + hosts + "[hosts.compare]\nmin_steady = '2m'\n")
    assert main(["config", "check", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    for secret in ("s3cret-token-value", "abcdef", "hunter2"):
        assert secret not in out
    shown = tomllib.loads(out)  # the listing is TOML itself
    server = shown["server"]
    assert (server["token"], server["webhook"]) == ("***", "***")
    assert server["database"] == "postgresql://kv:***@db.internal/kvwatch"
    assert (server["port"], server["host"]) == (8765, "127.0.0.1")  # defaults filled in
    gpu1 = shown["hosts"][1]
    assert (gpu1["transport"], gpu1["compare"]["min_steady"], gpu1["restart"]["stop_timeout"]) == ("ssh", 120.0, 120.0)
    assert shown["hosts"][0]["transport"] == "local"
    assert shown["alerts"]["token_usage_high"]["for"] == 120


def test_config_check_of_an_invalid_config_prints_the_error_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, HOSTS + "[hosts.compare]\nmin_stady = 90\n")
    assert main(["config", "check", "--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (f"kvwatch: error: {path}:15: hosts['gpu1'].compare.min_stady: unknown setting"
                                    " (allowed: min_steady)")
