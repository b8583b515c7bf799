"""Every store test runs against SQLite and against a real temp PostgreSQL cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kvwatch.app.store import Store, open_store


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()
