"""The demo's two runs (fp8, then the saturating 0.88) played by the simulator's engine so that the
0.88 run's last line is a few seconds old, then stored for host "local" as the live pipeline stores them."""

from __future__ import annotations

import time
from pathlib import Path

from kvwatch.app.compare.offline import load_log
from kvwatch.app.services import Services
from kvwatch.app.store.sqlite import SqliteStore
from tests.compare.simplay import STORY_SPECS, Played, play

RUN_S = 900.0
RESTART_GAP_S = 60.0


def write_live_story(path: Path, run_s: float = RUN_S) -> list[Played]:
    start = time.time() - 2 * run_s - RESTART_GAP_S - 5.0
    with path.open("w", encoding="utf-8") as out:
        fp8 = play(STORY_SPECS[2], out, start, run_s, seed=5)
        saturating = play(STORY_SPECS[1], out, fp8.end_epoch + RESTART_GAP_S, run_s, seed=15)
    return [fp8, saturating]


def store_live_story(services: Services, path: Path) -> list[Played]:
    played = write_live_story(path)
    assert isinstance(services.store, SqliteStore)
    load_log(services.store, "local", path)
    return played
