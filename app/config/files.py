"""Checks of the files a host's table points at, made once at start (serve, collect) and on reload.

Kept out of `parse_config` so that parsing stays pure (kvwatch init, tests and the web-only process
read configs whose key files live on another machine). Each error is one line naming the file, the
key's line and its path, like a parse error. A key file's content is never read here, so it can never
end up in a message.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from kvwatch.app.config.host import HostConfig
from kvwatch.app.config.tree import Config
from kvwatch.app.errors import ConfigError
from kvwatch.collectors.base import CollectorError
from kvwatch.collectors.ssh.target import SshTarget

Refuse = Callable[[str], ConfigError]  # a message about one key -> its one-line error


def check_host_files(config: Config) -> None:
    """Raise ConfigError for the first SSH host whose target, key file or known_hosts is unusable."""
    for index, host in enumerate(config.hosts):
        if not host.is_local:
            _check_host(config, index, host)


def _check_host(config: Config, index: int, host: HostConfig) -> None:
    def refuse(key: str, message: str) -> ConfigError:
        return ConfigError(config.error_at(("hosts", index, key), f".hosts[{host.name!r}].{key}: {message}"))

    try:
        SshTarget.parse(host.ssh, identity_file=host.identity_file, known_hosts=host.known_hosts)
    except CollectorError as exc:
        raise refuse("ssh", str(exc)) from None
    if host.identity_file is not None:
        path = os.path.expanduser(host.identity_file)
        mode = _mode(path, lambda message: refuse("identity_file", message))
        if mode & 0o077:
            raise refuse("identity_file", f"{path} is accessible by group or others (mode {mode & 0o777:04o}); "
                                          f"a private key must be 0600: chmod 600 {path}")
    if host.known_hosts is not None:
        _mode(os.path.expanduser(host.known_hosts), lambda message: refuse("known_hosts", message))


def _mode(path: str, refuse: Refuse) -> int:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise refuse(f"{path} does not exist") from None
    except OSError as exc:
        raise refuse(f"{path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise refuse(f"{path} is not a regular file")
    return info.st_mode
