"""A restart asked for a host kvwatch cannot restart says why: no such host (naming the ones there
are), or a host whose table has no `launch`. Both stay 404; before, one text covered both."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.main import create_app
from kvwatch.app.runner import build_services
from tests.app.slice_helpers import local_config

TOKEN = "t0ken-for-tests"


@pytest.mark.parametrize("route", ["restart", "restart/check"])
def test_a_host_without_launch_and_an_unknown_host_get_different_404s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    monkeypatch.setenv("KVWATCH_TOKEN", TOKEN)
    services = build_services(local_config(tmp_path))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = {"flags": {"mem-fraction-static": 0.85}}
    try:
        with TestClient(create_app(services, manage_collectors=False)) as client:
            configured = client.post(f"/api/hosts/local/{route}", json=body, headers=auth)
            unknown = client.post(f"/api/hosts/gpu9/{route}", json=body, headers=auth)
    finally:
        services.store.close()
    assert configured.status_code == 404 and unknown.status_code == 404
    assert configured.json()["detail"] == (
        "no controller for host 'local': its [[hosts]] table has no `launch`, so kvwatch does not restart it")
    assert unknown.json()["detail"] == "no controller for host 'gpu9': no such host in kvwatch.toml (hosts: local)"
