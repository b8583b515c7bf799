"""Reading kvwatch.toml from disk: which file, its text, and the refusal of a world-readable secret."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from kvwatch.app.config.lines import KeyLines
from kvwatch.app.config.tree import Config, parse_config
from kvwatch.app.errors import ConfigError


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate kvwatch.toml; every error names the file (and the line of the key)."""
    where = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{where}: config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read config file: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    config = parse_config(data, where, KeyLines(text))
    _refuse_world_readable_secrets(Path(path), config)
    return config


def _refuse_world_readable_secrets(path: Path, config: Config) -> None:
    """A config that holds the control token (or a database password) must not be readable by every
    user of the machine: whoever reads it can restart the server."""
    held = [(key, name) for key, name, present in (
        ("token", "server.token", bool(config.server.token)),
        ("database", "the database password", config.server.database_password),
    ) if present]
    if not held:
        return
    mode = path.stat().st_mode & 0o777
    if mode & 0o004:
        detail = (f".server.{held[0][0]}: this file holds {' and '.join(name for _, name in held)} and is readable"
                  f" by every user (mode {mode:04o}); chmod 600 {path}, or set the token in KVWATCH_TOKEN instead")
        raise ConfigError(config.error_at(("server", held[0][0]), detail))


def default_config_path() -> Path | None:
    """The config commands read without --config: ./kvwatch.toml, then $XDG_CONFIG_HOME/kvwatch/kvwatch.toml."""
    xdg = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    for candidate in (Path("kvwatch.toml"), xdg / "kvwatch" / "kvwatch.toml"):
        if candidate.is_file():
            return candidate
    return None
