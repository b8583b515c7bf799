"""Fixtures for the controller tests (helpers live in support.py so they are imported once)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kvwatch.app.config.controller import ControllerConfig
from kvwatch.app.controller.restart import HostController
from kvwatch.collectors.base import Transport
from kvwatch.collectors.local import LocalTransport
from tests.controller.support import MemorySinks


@pytest.fixture
def sinks() -> MemorySinks:
    return MemorySinks()


@pytest.fixture
def controllers() -> Iterator[Callable[..., HostController]]:
    """Builds HostControllers and, at teardown, stops what they started (by their record, not by pattern)."""
    made: list[HostController] = []

    def build(config: ControllerConfig, connect: Callable[[], Transport] = LocalTransport,
              sinks: MemorySinks | None = None, **kwargs: Any) -> HostController:
        box = sinks or MemorySinks()
        controller = HostController(config, connect, box, box, **kwargs)
        made.append(controller)
        return controller

    yield build
    for controller in made:
        controller.wait(60)
        try:
            controller.remote.stop(5)
        except Exception as exc:  # the transport may be the thing under test
            print(f"teardown: {controller.name}: {exc}")
