"""Where a run's server log is: a controller-started server logs to a file of its own per run."""

from __future__ import annotations

import re

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def run_log_path(log_dir: str, host: str, token: str) -> str:
    """Where a controller-started server logs; `token="*"` gives the glob the collector follows."""
    return f"{log_dir.rstrip('/')}/sglang-{_SAFE.sub('_', host)}-{token}.log"
