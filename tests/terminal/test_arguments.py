"""The command lines of `kvwatch status` and `kvwatch wait`, parsed (no kvwatch needed)."""

from __future__ import annotations

import pytest

from kvwatch.app.cli import build_parser, load_command
from kvwatch.app.terminal.conditions import Condition

PARSER = build_parser([load_command("status"), load_command("wait")])


def test_status_defaults_and_flags() -> None:
    plain = PARSER.parse_args(["status"])
    assert (plain.host, plain.json, plain.watch, plain.url, plain.config) == (None, False, None, None, None)
    full = PARSER.parse_args(["status", "--host", "gpu1", "--json", "--watch", "1", "--url", "http://h:1"])
    assert (full.host, full.json, full.watch, full.url) == ("gpu1", True, 1.0, "http://h:1")


def test_wait_parses_the_condition_and_the_timeout() -> None:
    args = PARSER.parse_args(["wait", "--host", "gpu1", "--until", "completions>=88000", "--timeout", "0"])
    assert (args.until, args.timeout, args.interval) == (Condition("completions", count=88000), 0.0, 2.0)
    assert PARSER.parse_args(["wait", "--host", "g", "--until", "steady", "--timeout", "2.5"]).timeout == 2.5


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--watch", "0"],
        ["status", "--watch", "soon"],
        ["wait", "--until", "ready"],  # --host is required
        ["wait", "--host", "g"],  # so is --until
        ["wait", "--host", "g", "--until", "stable"],
        ["wait", "--host", "g", "--until", "ready", "--timeout", "-1"],
        ["wait", "--host", "g", "--until", "ready", "--timeout", "nan"],
        ["wait", "--host", "g", "--until", "ready", "--interval", "0"],
    ],
)
def test_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        PARSER.parse_args(argv)
    assert exited.value.code == 2
    assert "error: " in capsys.readouterr().err
