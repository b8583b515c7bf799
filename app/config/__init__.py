"""kvwatch.toml: one typed tree, read once and validated whole; every error one line naming the
file, the key's line and its path (`kvwatch.toml:14: hosts['gpu1'].compare.min_steady: ...`).

    config = load_config("kvwatch.toml")     # Config: .server, .hosts, .presets, .vetoes, .alerts

The modules, bottom up: tables.py (the base model and shared value types), server.py, controller.py,
compare.py, campaign.py, alert_rules.py and alerts.py (the tables), host.py, tree.py (the file),
messages.py and lines.py (errors with key path and line), load.py (the file on disk), files.py (the
key files a host points at, checked at start), show.py (`kvwatch config check`'s listing).
"""

from __future__ import annotations

from kvwatch.app.config.host import HOST_TABLES, LOCAL, HostConfig, HostTable
from kvwatch.app.config.load import default_config_path, load_config
from kvwatch.app.config.server import SECRET_KEYS, ServerConfig, ServerTable
from kvwatch.app.config.tree import Config, ConfigFile, parse_config
from kvwatch.app.errors import ConfigError

SERVER_KEYS = frozenset(ServerConfig.keys())
HOST_KEYS = frozenset(HostConfig.keys())
TOP_KEYS = frozenset(ConfigFile.keys())

__all__ = [
    "HOST_KEYS", "HOST_TABLES", "LOCAL", "SECRET_KEYS", "SERVER_KEYS", "TOP_KEYS", "Config", "ConfigError",
    "ConfigFile", "HostConfig", "HostTable", "ServerConfig", "ServerTable", "default_config_path", "load_config",
    "parse_config",
]
