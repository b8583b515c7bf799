"""Shared fixtures live in tests/fixtures/ and are registered here, explicitly.

Tests that start a real component are marked by the fixtures they use (and by their folder for the
browser), so `make check` can leave them out without every test having to remember its marker.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.fixtures.web", "tests.fixtures.sshd", "tests.fixtures.postgres"]

# fixture name -> the marker of the real component it starts
COMPONENT_FIXTURES: dict[str, str] = {
    "sshd": "sshd",
    "netns_host": "sshd",
    "pg_cluster": "postgres",
    "pg_url": "postgres",
    "page": "browser",
    "context": "browser",
    "browser": "browser",
}
BROWSER_FOLDER = "tests/browser/"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        wanted = {marker for fixture, marker in COMPONENT_FIXTURES.items() if fixture in names}
        if BROWSER_FOLDER in item.nodeid.replace("\\", "/"):
            wanted.add("browser")
        callspec = getattr(item, "callspec", None)
        if callspec is not None and str(callspec.params.get("store_url", "")).startswith("postgres"):
            wanted.add("postgres")
        for marker in sorted(wanted - {m.name for m in item.iter_markers()}):
            item.add_marker(getattr(pytest.mark, marker))
