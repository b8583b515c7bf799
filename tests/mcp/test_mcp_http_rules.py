"""/mcp on the app keeps the app's rules: its Host names, the Origin rule of the mutating endpoints,
and an agent's every message is not counted as a mutation (its restart is, through the API)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.api.limits import Limits
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import open_store

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def initialize(n: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    host = HostConfig(name="gpu1", ssh="local", server_log=str(tmp_path / "server.log"))
    config = Config(server=ServerConfig(data_dir=str(tmp_path)), hosts=(host,))
    services = Services(config=config, store=open_store(str(tmp_path / "kvwatch.db")))
    with TestClient(create_app(services, manage_collectors=False), base_url="http://127.0.0.1:8765") as test_client:
        yield test_client
    services.store.close()


def test_an_agent_without_origin_is_answered(client: TestClient) -> None:
    answer = client.post("/mcp", json=initialize(), headers=HEADERS)
    assert answer.status_code == 200, answer.text
    assert answer.headers.get("mcp-session-id") and '"serverInfo"' in answer.text and '"kvwatch"' in answer.text


def test_a_cross_site_origin_is_refused_as_on_the_mutating_endpoints(client: TestClient) -> None:
    answer = client.post("/mcp", json=initialize(), headers={**HEADERS, "Origin": "http://evil.example"})
    assert answer.status_code == 403
    assert answer.json()["detail"].startswith("cross-site request refused")
    same = client.post("/mcp", json=initialize(), headers={**HEADERS, "Origin": "http://127.0.0.1:8765"})
    assert same.status_code == 200, same.text


def test_a_foreign_host_name_is_refused_before_mcp(client: TestClient) -> None:
    answer = client.post("/mcp", json=initialize(), headers={**HEADERS, "Host": "rebind.evil.example"})
    assert answer.status_code == 400
    local = client.post("/mcp", json=initialize(), headers={**HEADERS, "Host": "localhost:8765"})
    assert local.status_code == 200, local.text


def test_messages_to_mcp_do_not_spend_the_mutation_budget(client: TestClient) -> None:
    codes = [client.post("/mcp", json=initialize(n), headers=HEADERS).status_code
             for n in range(Limits().mutation_burst + 5)]
    assert codes == [200] * len(codes)
