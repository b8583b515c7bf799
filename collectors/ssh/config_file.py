"""~/.ssh/config read without running anything from it.

paramiko's `SSHConfig.lookup` runs the command of a `Match exec "..."` block (through `invoke`) to
decide whether the block applies. kvwatch never runs commands from a config file it only reads for
host names, ports, users and keys: such a block is read as one that matches no host, and said so in
the log. `ProxyCommand` would also run a command; the SSH transport refuses it by name
(target.py) instead of ignoring it.
"""

from __future__ import annotations

import logging
import re
import shlex
from typing import NamedTuple

import paramiko

from kvwatch.collectors.base import CollectorError

log = logging.getLogger(__name__)
# `Match` followed anywhere on its line by the `exec` criterion (`exec "cmd"` or `exec=cmd`).
MATCH_EXEC = re.compile(r"^(\s*)match\b(?=.*(?:^|\s)!?exec(?:\s|=))", re.IGNORECASE)
NEVER_MATCHES = "Host kvwatch-never-matches.invalid"
WILDCARDS = frozenset("*?!")


class ConfigHost(NamedTuple):
    """A concrete `Host` alias and what ssh would connect to for it."""

    alias: str
    hostname: str
    user: str | None
    port: str


def without_match_exec(text: str) -> tuple[str, int]:
    """The config text with every `Match ... exec ...` line turned into a block no host matches."""
    lines, skipped = [], 0
    for line in text.splitlines():
        match = MATCH_EXEC.match(line)
        if match is not None:
            lines.append(match.group(1) + NEVER_MATCHES)
            skipped += 1
        else:
            lines.append(line)
    return "\n".join(lines) + "\n", skipped


def read_ssh_config(path: str) -> paramiko.SSHConfig:
    """The parsed config; raises OSError or paramiko.SSHException as `SSHConfig.from_path` does."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        text, skipped = without_match_exec(handle.read())
    if skipped:
        log.warning("%s: %d `Match exec` block(s) never apply: kvwatch runs no command from an ssh config",
                    path, skipped)
    return paramiko.SSHConfig.from_text(text)


def host_patterns(text: str) -> list[str]:
    """Every pattern of every `Host` line, in order (paramiko's `get_hostnames` fails on `Match`)."""
    patterns: list[str] = []
    for line in text.splitlines():
        keyword, _, rest = line.strip().replace("=", " ", 1).partition(" ")
        if keyword.lower() != "host":
            continue
        try:
            words = shlex.split(rest)  # `Host "h100 box"` is one name, as ssh and paramiko read it
        except ValueError:
            words = rest.split()
        patterns += [w for w in words if w not in patterns]
    return patterns


def concrete_hosts(path: str) -> list[ConfigHost]:
    """Concrete Host aliases (no wildcard patterns), sorted, with `Match` blocks applied as ssh
    would, except `Match exec`, which never runs. CollectorError names the file and the alias."""
    try:
        config = read_ssh_config(path)
        with open(path, encoding="utf-8", errors="replace") as handle:
            aliases = host_patterns(handle.read())
    except (OSError, paramiko.SSHException, ValueError) as exc:
        raise CollectorError(f"{path}: cannot read ssh config: {exc}") from None
    hosts = []
    for alias in aliases:
        if WILDCARDS & set(alias) or alias.startswith("!"):
            continue
        try:
            entry = config.lookup(alias)
        except (paramiko.SSHException, ValueError, ImportError, KeyError) as exc:  # a block paramiko cannot decide
            raise CollectorError(f"{path}: cannot resolve Host {alias!r}: {exc}") from None
        hosts.append(ConfigHost(alias, entry.get("hostname", alias), entry.get("user"), entry.get("port", "22")))
    return sorted(hosts, key=lambda h: h.alias)
