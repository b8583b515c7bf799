"""A failing simulator test must not leave its server running (each one is a live process)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.simulator.helpers import STARTED


@pytest.fixture(autouse=True)
def stop_simulators() -> Iterator[None]:
    yield
    while STARTED:
        STARTED.pop().stop()
