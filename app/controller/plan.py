"""Before anything runs: what a request means, whether policy allows it, whether the loop cap does.

Pure checks (no I/O): `plan_flags` turns a request into the complete flags of the next run, raising
InvalidFlags (422) or Vetoed (403); `StartWindow` is the restart-loop cap (429).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from kvwatch.app.config.controller import ControllerConfig
from kvwatch.app.controller.errors import InvalidFlags, RateLimited, Vetoed
from kvwatch.app.flags.argv import Launch, merge
from kvwatch.app.flags.exposure import is_guarded
from kvwatch.app.flags.schema import FlagError, FlagValue, Schema, ValidationError, normalize
from kvwatch.parsers.secrets import REDACTED


def plan_flags(config: ControllerConfig, schema: Schema, launch: Launch, flags: dict[str, object] | None,
               preset: str | None) -> dict[str, FlagValue]:
    """launch + preset + flags, validated (strict) and checked against the vetoes."""
    requested: dict[str, object] = {}
    if preset is not None:
        if preset not in config.presets:
            raise InvalidFlags([ValidationError("preset", f"unknown preset {preset!r} for {config.host}")])
        requested.update(config.presets[preset].flags)
    requested.update(_without_redacted(flags))
    changes, errors = normalize(schema, requested, strict=True)
    if errors:
        raise InvalidFlags(errors)
    _refuse_guarded(config, launch, changes)
    target = merge(launch.flags, changes)
    veto = config.veto_for(schema, target)
    if veto is not None:
        raise Vetoed(f"--{veto.flag}={veto.value} is vetoed on {config.host}: {veto.reason}")
    return target


def _without_redacted(flags: dict[str, object] | None) -> dict[str, object]:
    """The page shows a secret flag of the launch line as REDACTED and sends it back as it is: that means
    "as launched", so the launch line's own value stays (merge keeps what a request does not change)."""
    return {flag: value for flag, value in (flags or {}).items() if value != REDACTED}


def _refuse_guarded(config: ControllerConfig, launch: Launch, changes: dict[str, FlagValue]) -> None:
    """Flags that load code or change what is served or exposed: only by name from the config (403)."""
    refused = sorted(flag for flag, value in changes.items()
                     if is_guarded(flag) and flag not in config.allow_flags and launch.flags.get(flag) != value)
    if refused:
        names = ", ".join(f"--{flag}" for flag in refused)
        raise Vetoed(f"{names} on {config.host}: not a tuning flag (it loads code or changes what is served or "
                     f"exposed); allow it by name in hosts.restart.allow_flags")


@dataclass(frozen=True, slots=True)
class Problem:
    """Why one flag of a request would be refused, found before anything is confirmed."""

    flag: str
    kind: str  # "invalid" (type, choice, range, unsafe text) | "guarded" (not a tuning flag) | "vetoed"
    message: str

    def public(self) -> dict[str, str]:
        return {"flag": self.flag, "kind": self.kind, "message": self.message}


def plan_problems(config: ControllerConfig, schema: Schema, launch: Launch, flags: dict[str, object] | None,
                  preset: str | None = None) -> list[Problem]:
    """Every reason `plan_flags` would refuse this request, one per flag (a dry run: nothing is raised)."""
    requested: dict[str, object] = {}
    if preset is not None:
        if preset not in config.presets:
            return [Problem("preset", "invalid", f"unknown preset {preset!r} for {config.host}")]
        requested.update(config.presets[preset].flags)
    requested.update(_without_redacted(flags))
    changes, errors = normalize(schema, requested, strict=True)
    found = [Problem(e.flag, "invalid", e.message) for e in errors]
    found += [Problem(flag, "guarded", "not a tuning flag (it loads code or changes what is served or exposed); "
                                       "allow it by name in hosts.restart.allow_flags")
              for flag, value in sorted(changes.items())
              if is_guarded(flag) and flag not in config.allow_flags and launch.flags.get(flag) != value]
    target = merge(launch.flags, changes)
    found += [Problem(_canonical(schema, veto.flag), "vetoed",
                      f"--{veto.flag}={veto.value} is vetoed on {config.host}: {veto.reason}")
              for veto in config.vetoes if veto.matches(schema, target)]
    return found


def _canonical(schema: Schema, flag: str) -> str:
    try:
        return schema.resolve(flag)[0].name
    except FlagError:
        return flag


def shown(flags: dict[str, object] | None, preset: str | None) -> dict[str, FlagValue]:
    """A refused request as the audit shows it: names and values as text, never interpreted."""
    text: dict[str, FlagValue] = {str(k): repr(v) for k, v in (flags or {}).items()}
    if preset is not None:
        text["<preset>"] = repr(preset)
    return text


class StartWindow:
    """At most `cap` server starts per `window` seconds (rollbacks included), like systemd's StartLimitBurst."""

    def __init__(self, host: str, cap: int, window: float) -> None:
        self.host, self.cap, self.window = host, cap, window
        self._starts: deque[float] = deque()

    def check(self, at: float) -> None:
        while self._starts and self._starts[0] <= at - self.window:
            self._starts.popleft()
        if len(self._starts) >= self.cap:
            retry = self._starts[0] + self.window - at
            raise RateLimited(f"{self.host}: {self.cap} restarts within {self.window:.0f} s; "
                              f"next one allowed in {retry:.0f} s", retry_after=retry)

    def add(self, at: float) -> None:
        self._starts.append(at)

    def inherit(self, other: StartWindow) -> None:
        """Count `other`'s starts too (a controller rebuilt by a reload keeps the cap's history)."""
        self._starts = deque(sorted((*other._starts, *self._starts)))
