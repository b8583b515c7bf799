"""`--watch`: frames that redraw in place on a terminal, appended blocks elsewhere."""

from __future__ import annotations

import io

import pytest

from kvwatch.app.errors import KvwatchError
from kvwatch.app.terminal.client import Unreachable
from kvwatch.app.terminal.screen import frame, watch


def test_a_frame_homes_clears_each_line_end_and_below() -> None:
    assert frame("a\nbb\n", first=False) == "\x1b[Ha\x1b[K\nbb\x1b[K\n\x1b[J"
    assert frame("a\n", first=True) == "\x1b[2J\x1b[Ha\x1b[K\n\x1b[J"


def test_watch_in_place_clears_the_screen_once() -> None:
    out, waits = io.StringIO(), list[float]()
    texts = iter(["one\n", "two\n", "three\n"])
    watch(lambda: next(texts), 1.5, out, in_place=True, sleep=waits.append, frames=3)
    assert out.getvalue() == frame("one\n", True) + frame("two\n", False) + frame("three\n", False)
    assert len(waits) == 2 and all(0 < w <= 1.5 for w in waits)


def test_watch_on_a_pipe_appends_every_refresh_without_escape_codes() -> None:
    out = io.StringIO()
    watch(lambda: "block\n\n", 1.0, out, in_place=False, sleep=lambda _: None, frames=2)
    assert out.getvalue() == "block\n\nblock\n\n"


def test_a_failure_later_on_is_shown_and_the_watch_goes_on() -> None:
    answers: list[object] = ["ok\n", Unreachable("cannot reach kvwatch"), "ok again\n"]

    def draw() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return str(answer)

    out = io.StringIO()
    watch(draw, 2.0, out, in_place=False, sleep=lambda _: None, frames=3)
    assert out.getvalue() == "ok\nkvwatch: cannot reach kvwatch (retrying every 2 s)\nok again\n"


def test_a_failure_of_the_first_frame_is_the_commands_failure() -> None:
    def draw() -> str:
        raise Unreachable("cannot reach kvwatch")

    with pytest.raises(KvwatchError):
        watch(draw, 1.0, io.StringIO(), in_place=False, sleep=lambda _: None, frames=2)
