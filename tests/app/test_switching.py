"""The interpreter lock's switch interval follows the number of collected hosts."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from kvwatch.app.pipeline.switching import DEFAULT_S, FLEET_HOSTS, FLEET_S, fit_switch_interval


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_a_fleet_gets_the_longer_interval_and_a_few_hosts_keep_pythons_default() -> None:
    assert fit_switch_interval(FLEET_HOSTS) == FLEET_S
    assert sys.getswitchinterval() == pytest.approx(FLEET_S)
    assert fit_switch_interval(256) == FLEET_S
    assert fit_switch_interval(FLEET_HOSTS - 1) == DEFAULT_S
    assert sys.getswitchinterval() == pytest.approx(DEFAULT_S)
    assert fit_switch_interval(0) == DEFAULT_S
