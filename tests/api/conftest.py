"""An app over a real SQLite store with two configured hosts; collectors are not started."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import open_store


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    hosts = tuple(
        HostConfig(name=name, ssh="local", server_log=str(tmp_path / f"{name}.log"), target_completions=1000)
        for name in ("gpu1", "gpu2")
    )
    config = Config(server=ServerConfig(data_dir=str(tmp_path)), hosts=hosts)
    built = Services(config=config, store=open_store(str(tmp_path / "kvwatch.db")))
    yield built
    built.store.close()


@pytest.fixture
def client(services: Services) -> Iterator[TestClient]:
    with TestClient(create_app(services, manage_collectors=False)) as test_client:
        yield test_client
