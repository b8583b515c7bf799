"""Every kvwatch.toml key is documented in the README and set by at least one test.

A guard, not a proof: a key added to app/config/ fails here until the README shows it and a test sets
it (as a TOML key or a config keyword), so no setting ships undocumented or untried.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from kvwatch.app.alerts import validate_alert_config
from kvwatch.app.config import HOST_KEYS, SERVER_KEYS, TOP_KEYS, parse_config
from kvwatch.app.controller.policy import parse_controller_config

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
TEST_TEXTS = {
    path: path.read_text() for path in (ROOT / "tests").rglob("*.py") if path.name != Path(__file__).name
}
KEYS = sorted({f"server.{k}" for k in SERVER_KEYS} | {f"hosts.{k}" for k in HOST_KEYS} | set(TOP_KEYS))


def _set(key: str) -> re.Pattern[str]:
    # `key = ...` (TOML or a keyword argument), or a table header: [server], [[hosts]], [hosts.presets.x]
    return re.compile(rf"(?:^|[\s\[.{{(,'\"]){re.escape(key)}\s*(?:=|\]|\.[\w-]+\])", re.MULTILINE)


@pytest.mark.parametrize("key", KEYS)
def test_every_key_is_documented_in_the_readme(key: str) -> None:
    assert _set(key.rpartition(".")[2]).search(README), f"{key} is not shown in README.md"


@pytest.mark.parametrize("key", KEYS)
def test_every_key_is_set_by_a_test(key: str) -> None:
    pattern = _set(key.rpartition(".")[2])
    assert any(pattern.search(text) for text in TEST_TEXTS.values()), f"no test sets {key}"


def test_the_readme_examples_are_valid_configs() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", README, re.DOTALL)
    assert blocks
    for block in blocks:
        data = tomllib.loads(block)
        config = parse_config(data, "README.md")
        validate_alert_config(config)
        for host in data.get("hosts", []):
            parse_controller_config(host, data)
    assert parse_config(tomllib.loads(blocks[-1])).server.retention_days == 14.0
