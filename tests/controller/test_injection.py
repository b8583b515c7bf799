"""Shell metacharacters, control characters and option-lookalikes never reach a shell.

Two layers, both tested: requests are refused before anything runs (the character set of API values
excludes every metacharacter); and whatever the owner's own launch line contains is passed as literal
argv elements (LocalTransport: no shell; the SSH version of this is in test_restart_ssh.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvwatch.app.controller.errors import InvalidFlags
from kvwatch.app.flags.argv import render
from kvwatch.app.flags.schema import load_bundled, normalize
from tests.controller.support import MemorySinks, free_port, make_config

SCHEMA = load_bundled("0.5.23")
NASTY_VALUES = [
    "x; rm -rf ~", "$(id)", "`id`", "a\nb", "a\rb", "a\0b", "-x", "--port=1", "a b", "a\tb", "a|b", "a&b",
    "a>b", "a<b", "'", '"', "a*", "a?", "$HOME", "${IFS}", "a\\b", "x" * 5000, "ｍodel",  # fullwidth m
    "a\u2028b", "a\x85b", "\u200bx", "—help", "a;b", "a{b,c}", "!x", "#x",
]
NASTY_NAMES = ["port; id", "--port=1", "—port", "ｐort", "port\n", "por t", "$(id)", "-", "--", "port\0"]


@pytest.mark.parametrize("value", NASTY_VALUES)
def test_nasty_values_are_refused_before_anything_runs(tmp_path: Path, controllers, value: str) -> None:
    sinks = MemorySinks()
    marker = tmp_path / "argv"
    controller = controllers(make_config(tmp_path, free_port(), env=f"FAKE_ARGV_LOG={marker}"), sinks=sinks)
    with pytest.raises(InvalidFlags) as refused:
        controller.begin("attacker", flags={"served-model-name": value})
    assert refused.value.errors[0].flag == "served-model-name"
    assert not (tmp_path / "state").exists()  # the helper never ran: no remote call at all
    assert not marker.exists()
    assert [a.outcome for a in sinks.audits] == ["invalid"]


@pytest.mark.parametrize("name", NASTY_NAMES)
def test_nasty_flag_names_are_refused(name: str) -> None:
    _, errors = normalize(SCHEMA, {name: "1"})
    assert len(errors) == 1


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_every_accepted_value_is_plain_and_renders_as_one_option(value: str) -> None:
    flags, errors = normalize(SCHEMA, {"served-model-name": value})
    if errors:
        return
    assert re.fullmatch(r"[A-Za-z0-9._:/=,+@%~-]+", value)
    assert not value.startswith("-")
    assert render(SCHEMA, flags) == [f"--served-model-name={value}"]


@given(st.lists(st.text(max_size=20), max_size=4))
@settings(max_examples=200, deadline=None)
def test_list_items_can_never_become_options(items: list[str]) -> None:
    flags, errors = normalize(SCHEMA, {"lora-paths": items})
    if errors:
        return
    argv = render(SCHEMA, flags)
    assert argv[0] == "--lora-paths"
    assert not any(item.startswith("-") for item in argv[1:])


def test_the_owners_launch_values_reach_the_server_verbatim(tmp_path: Path, controllers) -> None:
    """Launch lines are trusted for characters: prove they still arrive as data, never as shell code."""
    pwned = tmp_path / "pwned"
    marker = tmp_path / "argv"
    value = f"a;touch {pwned}|$(touch {pwned})`touch {pwned}`'\"*"
    table_env = f"FAKE_ARGV_LOG={marker}"
    config = make_config(tmp_path, free_port(), env=table_env)
    config = config.model_copy(update={"launch": config.launch + f" --served-model-name {_sh_quote(value)}"})
    controller = controllers(config)
    controller.begin("owner", flags={"decode-log-interval": 10})
    done = controller.wait(120)
    assert done is not None
    assert done.outcome == "ok", done.detail
    argv = json.loads(marker.read_text().splitlines()[0])
    assert f"--served-model-name={value}" in argv
    assert not pwned.exists()


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
