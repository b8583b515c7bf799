"""Errors the user can act on. The CLI prints them as one line, never as a traceback; the API answers
them with the code app/api/errors.py registers for their kind (none of them knows HTTP)."""

from __future__ import annotations


class KvwatchError(Exception):
    """A problem with input or environment, stated in one line that names the file, field or host."""

    exit_code = 2


class ConfigError(KvwatchError):
    """kvwatch.toml is missing, unreadable, or has a bad field."""


class NotFound(KvwatchError):
    """Something a request or command names does not exist (a run, a host's stored series)."""


class UnknownRun(NotFound):
    """No run has this id (on this host)."""


class Conflict(KvwatchError):
    """What is asked does not fit the present state (acknowledging an alert that is not open)."""


class StoreUnavailable(KvwatchError):
    """The store cannot be reached now (a PostgreSQL restart); the API answers 503 until it is back."""
