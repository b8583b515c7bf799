"""docs/cli.md has a section for every command, and a line for every option and argument of each
(and nothing the parser does not take)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from kvwatch.app.cli import COMMAND_NAMES, build_parser

DOC = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
SECTION = re.compile(r"^## (.+)$", re.MULTILINE)


def documented() -> dict[str, set[str]]:
    """section title -> the options and arguments its bullet lines name"""
    parts = SECTION.split(DOC)
    out: dict[str, set[str]] = {}
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        heads = (line.split(":", 1)[0].split(" (")[0] for line in body.splitlines() if line.startswith("- `"))
        out[title] = {name for head in heads for name in re.findall(r"`([^`]+)`", head)}
    return out


def taken(parser: argparse.ArgumentParser) -> set[str]:
    names: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        names |= set(action.option_strings) or {(action.metavar or action.dest).upper()}
    return names


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_is_documented_and_no_other() -> None:
    commands = {title.removeprefix("`kvwatch ").removesuffix("`") for title in documented() if title.startswith("`")}
    assert sorted(commands) == sorted(COMMAND_NAMES)
    assert sorted(_subparsers()) == sorted(COMMAND_NAMES)


def test_every_option_of_every_command_is_documented_and_no_other() -> None:
    doc = documented()
    for name, sub in _subparsers().items():
        assert doc[f"`kvwatch {name}`"] == taken(sub), name


def test_the_global_options_are_documented() -> None:
    assert documented()["Global options"] == taken(build_parser())
