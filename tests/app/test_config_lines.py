"""Every config error names its line (issue #32): the key-file checks made after parsing too, and the
line scan is not fooled by a `key =` or a `[table]` written inside a value that spans lines."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from kvwatch.app.config import load_config
from kvwatch.app.config.files import check_host_files
from kvwatch.app.config.lines import KeyLines
from kvwatch.app.errors import ConfigError

SSH_HOST = """\
[server]
port = 8765

[[hosts]]
name = "gpu1"
ssh = "root@10.0.0.1:22"
server_log = "/logs/gpu1.log"
"""  # 7 lines


def write(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "kvwatch.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_missing_key_file_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, SSH_HOST + f"identity_file = '{tmp_path}/missing_key'\n")
    with pytest.raises(ConfigError) as caught:
        check_host_files(load_config(path))
    assert str(caught.value) == f"{path}:8: hosts['gpu1'].identity_file: {tmp_path}/missing_key does not exist"


def test_an_open_key_file_and_a_missing_known_hosts_name_their_lines(tmp_path: Path) -> None:
    key = tmp_path / "id_test"
    key.write_text("not a key\n")
    key.chmod(0o644)
    path = write(tmp_path, SSH_HOST + f"identity_file = '{key}'\nknown_hosts = '{tmp_path}/kh'\n")
    with pytest.raises(ConfigError, match=rf"^{path}:8: hosts\['gpu1'\]\.identity_file: .*mode 0644.*chmod 600"):
        check_host_files(load_config(path))
    key.chmod(0o600)
    with pytest.raises(ConfigError, match=rf"^{path}:9: hosts\['gpu1'\]\.known_hosts: {tmp_path}/kh does not exist$"):
        check_host_files(load_config(path))


def test_a_world_readable_token_names_the_token_line(tmp_path: Path) -> None:
    path = write(tmp_path, '[server]\nport = 8765\ntoken = "s3cret-value"\n', mode=0o644)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}:3: server.token: this file holds server.token and is readable")
    assert "s3cret-value" not in str(caught.value)


MULTILINE = '''\
[[hosts]]
name = "gpu1"
ssh = "local"
launch = """python -m sglang.launch_server
server_log = "/not/a/key"
[hosts.compare]
min_steady = 1
"""
server_log = '/logs/gpu1.log'
notes = \'\'\'
gpu = true
[[hosts]]
\'\'\'
outputs = [
  "a = b",
  "[hosts.restart]",
  # metrics_port = 1
]
alerts = { token_usage_high = { fire_at = 0.9 } }
gpu = "yes"
'''


@pytest.mark.parametrize(("loc", "line"), [
    (("hosts", 0, "server_log"), 9),        # not line 5, inside the launch string
    (("hosts", 0, "gpu"), 20),              # not line 11, inside the ''' string
    (("hosts", 0, "compare", "min_steady"), 1),  # no [hosts.compare] table: the host's header
    (("hosts", 0, "metrics_port"), 1),      # a comment inside an array sets nothing
    (("hosts", 0, "alerts", "token_usage_high", "fire_at"), 19),
    (("hosts", 1, "name"), None),           # the `[[hosts]]` inside a string is no second host
])
def test_text_inside_a_value_spanning_lines_is_not_a_key(loc: tuple[int | str, ...], line: int | None) -> None:
    tomllib.loads(MULTILINE)  # the text is valid TOML
    lines = KeyLines(MULTILINE)
    assert lines(loc) == line
    assert ("hosts", 1) not in lines.lines


def test_quotes_and_escapes_at_a_multi_line_string_end() -> None:
    text = 'a = """x\\"""\nb = 1\n""""\nc = [\n  {d = "]"},\n  \'[\',\n]\ne = 2\n'
    assert tomllib.loads(text) == {"a": 'x"""\nb = 1\n"', "c": [{"d": "]"}, "["], "e": 2}
    lines = KeyLines(text)
    assert lines(("e",)) == 8
    assert ("b",) not in lines.lines and ("d",) not in lines.lines


def test_a_bad_value_after_a_multi_line_string_is_reported_on_its_own_line(tmp_path: Path) -> None:
    path = write(tmp_path, MULTILINE.replace("notes = ", "client_log = "))
    with pytest.raises(ConfigError, match=rf"^{path}:20: hosts\['gpu1'\]\.gpu: expected bool"):
        load_config(path)
