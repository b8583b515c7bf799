"""Errors the user can act on. The CLI prints them as one line, never as a traceback."""

from __future__ import annotations


class KvwatchError(Exception):
    """A problem with input or environment, stated in one line that names the file, field or host."""

    exit_code = 2


class ConfigError(KvwatchError):
    """kvwatch.toml is missing, unreadable, or has a bad field."""


class StoreUnavailable(KvwatchError):
    """The store cannot be reached now (a PostgreSQL restart); the API answers 503 until it is back."""
