"""Hostile flag names and values through the real HTTP endpoint, with the real token: every one is
refused (4xx) and audited, and nothing reaches a shell: each payload tries to create a canary file
that must never exist."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kvwatch.app.main import create_app
from tests.app.slice_helpers import start_services
from tests.controller.conftest import controllers  # noqa: F401  (the fixture, with its teardown)
from tests.controller.support import MemorySinks, free_port, make_config
from tests.hardening.world import OPEN_LIMITS, TOKEN

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def payloads(canary: Path) -> list[str]:
    touch = f"touch {canary}"
    return [
        f"x; {touch}", f"$({touch})", f"`{touch}`", f"x\n{touch}", f"x\r\n{touch}", f"x\0; {touch}",
        f"x && {touch}", f"x | {touch}", f"x > {canary}", f"--port=1 $({touch})", f"-x; {touch}", "--help",
        f"x；{touch}",  # fullwidth semicolon
        f"\u2010\u2010port=1; {touch}",  # unicode hyphens posing as a leading --
        f"x\u2028{touch}", f"x\u0085{touch}", f"\u200b$({touch})", f"${{IFS}}{touch}",
        f"'; {touch}; '", f'"; {touch}; "', f"x\\; {touch}", "y" * 20000 + f"; {touch}",
    ]


@pytest.fixture
def attack(tmp_path: Path, controllers: Any) -> Iterator[tuple[TestClient, MemorySinks, Path]]:  # noqa: F811
    sinks = MemorySinks()
    config = make_config(tmp_path, free_port(), env=f"FAKE_ARGV_LOG={tmp_path / 'argv'}")
    app = create_app(start_services(tmp_path), manage_collectors=False, limits=OPEN_LIMITS)
    app.state.api_token = TOKEN
    app.state.controllers = {"gpu1": controllers(config, sinks=sinks)}
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        yield client, sinks, tmp_path / "canary"


def bodies(canary: Path) -> Iterator[dict[str, Any]]:
    for value in payloads(canary):
        yield {"flags": {"served-model-name": value}}
        yield {"flags": {value[:200]: "x"}}
        yield {"flags": {"served-model-name": [value]}}
        yield {"flags": {"served-model-name": {"nested": value}}}
        yield {"preset": value}
        yield {"flags": {"tp": value}}


Attack = tuple[TestClient, MemorySinks, Path]


def test_hostile_names_and_values_are_refused_audited_and_never_run(attack: Attack) -> None:
    client, sinks, canary = attack
    sent = list(bodies(canary))
    for body in sent:
        answer = client.post("/api/hosts/gpu1/restart", json=body, headers=AUTH)
        assert 400 <= answer.status_code < 500 and answer.status_code not in (401, 404), (body, answer.text)
    assert not canary.exists()
    assert not (canary.parent / "argv").exists()  # the launcher never ran
    assert not (canary.parent / "state").exists()  # nor did the remote helper
    # Everything the controller saw is audited as refused; nothing else got an audit record.
    assert {a.outcome for a in sinks.audits} <= {"invalid", "vetoed", "refused"}
    assert len(sinks.audits) == len(sent)
    print(f"\ninjection over HTTP: {len(sent)} hostile requests, {len(sinks.audits)} audited, 0 run")
