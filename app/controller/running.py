"""What a server that kvwatch did not start runs, in the terms of the host's launch line.

The restart panel diffs the flags of the next run against the flags that run now. For a server the
controller started (or adopted), its own record has them. For any other (started by hand, by a script,
before kvwatch) the run registry has every argument SGLang logged at start (about 500, most of them
defaults); the panel needs them as the launch line would say them. The host's tuning vocabulary is
the launch line's flags plus the flags its presets set: each takes the run's value (a switch the run
has off, or no value, leaves the flag out). Flags that load code or change exposure keep the launch
line's value: a restart does not change them (app.flags.exposure), and the run's own (its port, its
host) would only read as changes the controller refuses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kvwatch.app.flags.exposure import is_guarded


def running_flags(launch: Mapping[str, Any], run: Mapping[str, Any],
                  preset_flags: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The run's values for the launch line's flags and the presets' flags, launch order first."""
    vocabulary = dict.fromkeys([*launch, *(name for flags in preset_flags for name in flags)])
    out: dict[str, Any] = {}
    for name in vocabulary:
        if is_guarded(name) or name not in run:
            if name in launch:
                out[name] = launch[name]
            continue
        value = run[name]
        if value is not None and value is not False:
            out[name] = value
    return out
