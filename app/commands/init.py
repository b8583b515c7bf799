"""`kvwatch init`: write a commented kvwatch.toml with one [[hosts]] table per ~/.ssh/config host.

The file is checked by the same loader `kvwatch serve` uses before it is written, and an existing
file is never replaced without --force.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import sys
import tempfile
import tomllib
from pathlib import Path

from kvwatch.app.config import parse_config
from kvwatch.app.errors import ConfigError
from kvwatch.collectors.base import CollectorError
from kvwatch.collectors.ssh.config_file import ConfigHost, concrete_hosts

NAME = "init"
HELP = "write a commented example kvwatch.toml with your ~/.ssh/config hosts"
SERVER_LOG_PLACEHOLDER = "/path/to/sglang_server.log"

HEADER = """\
# kvwatch.toml, written by `kvwatch init` on {date}{source}.
# Every key below is optional unless marked "required". `kvwatch serve` reads this file from
# --config, else ./kvwatch.toml, else $XDG_CONFIG_HOME/kvwatch/kvwatch.toml.

[server]
# host = "127.0.0.1"        # bind address; anything but loopback needs a token (KVWATCH_TOKEN or `token`)
token = {token}   # bearer token for restarts, 256 random bits; KVWATCH_TOKEN overrides it
# port = 8765
# database = "kvwatch.db"   # a SQLite file in data_dir, or postgresql://user@host/db to share one
#                           # database between several `kvwatch collect` processes and one web app
# data_dir = "."
# retention_days = 14       # keep each series' newest 14 days of raw samples; older history stays in
#                           # 10 s / 1 min / 10 min rollups (min and max kept), so old windows still draw
"""

HOST_BLOCK = """
[[hosts]]
name = {name}{resolved}
ssh = {ssh}                 # a ~/.ssh/config alias, or user@host:port; host keys must be known
server_log = {server_log}   # required: EDIT to the SGLang server's log file on this host
# client_log = "/path/to/client.log"              # the benchmark client's tqdm log: progress and ETA
# outputs = ["/path/to/outputs/*.jsonl"]           # output files: one completion a line
# target_completions = 88000                      # for the ETA
# launch = "python -m sglang.launch_server --model-path /models/M --tp 8"   # for restarts from the page
"""

EXAMPLE_HOST = """
# No Host entries found{why}. A host looks like this:
# [[hosts]]
# name = "gpu1"
# ssh = "root@10.1.230.174:22"
# server_log = "/data/logs/sglang_inference.log"
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, default=Path("kvwatch.toml"), help="default ./kvwatch.toml")
    parser.add_argument("--ssh-config", type=Path, default=Path("~/.ssh/config"), help="(default ~/.ssh/config)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    parser.add_argument("--stdout", action="store_true", help="print the config instead of writing a file")


def ssh_hosts(path: Path) -> list[ConfigHost]:
    """The concrete Host aliases of an ssh config (collectors/ssh/config_file.py); none if it is absent."""
    path = path.expanduser()
    if not path.is_file():
        return []
    try:
        return concrete_hosts(str(path))
    except CollectorError as exc:
        raise ConfigError(str(exc)) from None


def render(hosts: list[ConfigHost], source: Path | None) -> str:
    date = dt.date.today().isoformat()
    # A fresh secret each time; the file is created 0600 (mkstemp), since it now holds it.
    token = _toml_string(secrets.token_urlsafe(32))
    text = HEADER.format(date=date, source=f" from {source}" if source else "", token=token)
    for host in hosts:
        who = f"{host.user}@" if host.user else ""
        text += HOST_BLOCK.format(
            name=_toml_string(host.alias),
            resolved=f"                # {who}{host.hostname}:{host.port}",
            ssh=_toml_string(host.alias),
            server_log=_toml_string(SERVER_LOG_PLACEHOLDER),
        )
    if not hosts:
        text += EXAMPLE_HOST.format(why=f" in {source}" if source else "")
    parse_config(tomllib.loads(text), "kvwatch init")  # what we write, `kvwatch serve` must read
    return text


def _toml_string(value: str) -> str:
    # JSON's string escapes are a subset of TOML basic strings'.
    return json.dumps(value, ensure_ascii=False)


def write_new(path: Path, text: str, force: bool) -> None:
    if path.exists() and not force:
        raise ConfigError(f"{path}: already exists; pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed: an interrupted init never leaves half a config.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(args: argparse.Namespace) -> int:
    ssh_config = args.ssh_config.expanduser()
    hosts = ssh_hosts(ssh_config)
    text = render(hosts, ssh_config if ssh_config.is_file() else None)
    if args.stdout:
        sys.stdout.write(text)
        return 0
    write_new(args.output, text, args.force)
    print(f"wrote {args.output} with {len(hosts)} hosts; edit each server_log, then: kvwatch serve", file=sys.stderr)
    return 0
