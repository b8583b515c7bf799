"""~/.ssh/config read without running anything from it.

paramiko's `SSHConfig.lookup` runs the command of a `Match exec "..."` block (through `invoke`) to
decide whether the block applies. kvwatch never runs commands from a config file it only reads for
host names, ports, users and keys: such a block is read as one that matches no host, and said so in
the log. `ProxyCommand` would also run a command; the SSH transport refuses it by name
(ssh_target.py) instead of ignoring it.
"""

from __future__ import annotations

import logging
import re
import shlex

import paramiko

log = logging.getLogger(__name__)
# `Match` followed anywhere on its line by the `exec` criterion (`exec "cmd"` or `exec=cmd`).
MATCH_EXEC = re.compile(r"^(\s*)match\b(?=.*(?:^|\s)!?exec(?:\s|=))", re.IGNORECASE)
NEVER_MATCHES = "Host kvwatch-never-matches.invalid"


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
