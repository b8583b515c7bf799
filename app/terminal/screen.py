"""`--watch`: redraw the block in place on a terminal; append one block (or JSON line) per refresh
otherwise, so a log or an agent reading the pipe sees every refresh and no escape codes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from kvwatch.app.errors import KvwatchError

CLEAR_SCREEN = "\x1b[2J"
HOME = "\x1b[H"
CLEAR_TO_LINE_END = "\x1b[K"
CLEAR_BELOW = "\x1b[J"


def frame(text: str, first: bool) -> str:
    """What redraws `text` over the previous frame: home, each line cleared to its end, the rest
    below cleared (a shorter frame leaves nothing of the longer one). The screen is cleared once."""
    body = "".join(f"{line}{CLEAR_TO_LINE_END}\n" for line in text.splitlines())
    return (CLEAR_SCREEN if first else "") + HOME + body + CLEAR_BELOW


def watch(
    draw: Callable[[], str],
    interval: float,
    out: TextIO,
    in_place: bool,
    sleep: Callable[[float], None] = time.sleep,
    frames: int | None = None,
) -> None:
    """Call `draw` every `interval` s until interrupted (or `frames` times). A failure after the first
    frame (kvwatch restarting) is shown in place of the block and the watch goes on."""
    count = 0
    while frames is None or count < frames:
        started = time.monotonic()
        try:
            text = draw()
        except KvwatchError as exc:
            if count == 0:
                raise
            text = f"kvwatch: {exc} (retrying every {interval:g} s)\n"
        out.write(frame(text, count == 0) if in_place else text)
        out.flush()
        count += 1
        if frames is None or count < frames:
            sleep(max(interval - (time.monotonic() - started), 0.0))
