"""Checks of the files a host's table points at, made once at start (serve, collect) and on reload.

Kept out of `parse_config` so that parsing stays pure (kvwatch init, tests and the web-only process
read configs whose key files live on another machine). Each error is one line naming the field.
A key file's content is never read here, so it can never end up in a message.
"""

from __future__ import annotations

import os
import stat

from kvwatch.app.config.host import HostConfig
from kvwatch.app.config.tree import Config
from kvwatch.app.errors import ConfigError
from kvwatch.collectors.base import CollectorError
from kvwatch.collectors.ssh.target import SshTarget


def check_host_files(config: Config) -> None:
    """Raise ConfigError for the first SSH host whose target, key file or known_hosts is unusable."""
    for host in config.hosts:
        if not host.is_local:
            _check_host(config.path, host)


def _check_host(where: str, host: HostConfig) -> None:
    label = f"{where}: hosts[{host.name!r}]."
    try:
        SshTarget.parse(host.ssh, identity_file=host.identity_file, known_hosts=host.known_hosts)
    except CollectorError as exc:
        raise ConfigError(f"{label}ssh: {exc}") from None
    if host.identity_file is not None:
        path = os.path.expanduser(host.identity_file)
        mode = _mode(label + "identity_file", path)
        if mode & 0o077:
            raise ConfigError(
                f"{label}identity_file: {path} is accessible by group or others (mode {mode & 0o777:04o}); "
                f"a private key must be 0600: chmod 600 {path}"
            )
    if host.known_hosts is not None:
        _mode(label + "known_hosts", os.path.expanduser(host.known_hosts))


def _mode(field: str, path: str) -> int:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"{field}: {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{field}: {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{field}: {path} is not a regular file")
    return info.st_mode
