"""Why a restart request is refused before anything runs. The API answers each kind with the HTTP
code beside it (app/api/errors.py); nothing here knows HTTP.

    RestartRefused
     ├── InvalidFlags     422  unknown flag, bad choice or type, unsafe value, unknown preset
     ├── Vetoed           403  a value the owner ruled out (the veto's reason is the message)
     ├── Busy             409  a restart of this host is already under way (here or by another kvwatch)
     ├── StaleRun         409  the request names a run (`expected_run`) that is no longer the host's current one
     ├── RateLimited      429  the restart-loop cap for this host is reached
     └── HostUnavailable  503  the host cannot be asked (SSH down, no sglang to read flags from)
"""

from __future__ import annotations

from kvwatch.app.controller.sinks import Outcome
from kvwatch.app.flags.schema import FlagValue, ValidationError


class RestartRefused(Exception):
    outcome: Outcome = "failed"  # what the audit record says

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidFlags(RestartRefused):
    outcome: Outcome = "invalid"

    def __init__(self, errors: list[ValidationError]) -> None:
        super().__init__("; ".join(map(str, errors)))
        self.errors = errors


class Vetoed(RestartRefused):
    outcome: Outcome = "vetoed"


class Busy(RestartRefused):
    outcome: Outcome = "busy"


class StaleRun(RestartRefused):
    """The requester decided on what it saw of `expected` but the host has moved on to `current`."""

    outcome: Outcome = "stale"

    def __init__(self, host: str, expected: str, current: str | None,
                 current_flags: dict[str, FlagValue] | None = None) -> None:
        now = f"run {current}" if current is not None else "no run"
        super().__init__(f"{host} is no longer on run {expected}: its current run is {now}; "
                         "look at the current flags and send the request again")
        self.expected, self.current = expected, current
        self.current_flags = current_flags or {}  # for the audit record, known without asking the host


class RateLimited(RestartRefused):
    outcome: Outcome = "rate_limited"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HostUnavailable(RestartRefused):
    """The host cannot be asked now (SSH down, no sglang to read flags from)."""
