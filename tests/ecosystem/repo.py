"""Where the repo is, for tests that check files kept in it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ComposeRunner = Callable[..., subprocess.CompletedProcess[str]]
