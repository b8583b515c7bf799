"""docs/http.md has a section for every operation of the API (and no other), naming every query
parameter, and lists every event the stream sends."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.config import Config, ServerConfig
from kvwatch.app.main import create_app
from kvwatch.app.services import Services
from kvwatch.app.store import open_store

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "http.md").read_text()
OPERATION = re.compile(r"^### `([A-Z]+) (/\S*)`$", re.MULTILINE)


@pytest.fixture
def schema() -> dict[str, Any]:
    services = Services(config=Config(server=ServerConfig(), hosts=()), store=open_store(":memory:"))
    try:
        return create_app(services, manage_collectors=False).openapi()
    finally:
        services.store.close()


def sections() -> dict[tuple[str, str], str]:
    parts = OPERATION.split(DOC)
    bodies = [re.split(r"^#{2,3} ", body, maxsplit=1, flags=re.MULTILINE)[0] for body in parts[3::3]]
    return {(method, path): body for method, path, body in zip(parts[1::3], parts[2::3], bodies, strict=True)}


def operations(schema: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(method.upper(), path): op for path, ops in schema["paths"].items() for method, op in ops.items()}


def test_every_operation_is_documented_and_no_other(schema: dict[str, Any]) -> None:
    assert sorted(sections()) == sorted(operations(schema))


def test_every_query_parameter_is_named_in_its_section(schema: dict[str, Any]) -> None:
    docs = sections()
    for key, op in operations(schema).items():
        query = {p["name"] for p in op.get("parameters", ()) if p["in"] == "query"}
        found = re.search(r"^Query: .*?\.$", docs[key], re.MULTILINE | re.DOTALL)
        line = found.group(0).replace("\n", " ") if found else ""
        # `Query: `a` (required), `b` (`x` or `y`), `c`.`: each item of the list starts with its name
        named = set(re.findall(r"(?:^Query: |, )`([\w-]+)`", line))
        assert named == query, key


def _published_events() -> set[str]:
    """Every event name passed to a bus's publish() in app/, and the values of PUBLISHED_EVENTS."""
    names: set[str] = set()
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "publish":
                for arg in node.args[:1]:
                    names |= {c.value for c in ast.walk(arg)
                              if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PUBLISHED_EVENTS" for t in node.targets):
                names |= set(ast.literal_eval(node.value).values())
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "ServerSentEvent":
                names |= {kw.value.value for kw in node.keywords
                          if kw.arg == "event" and isinstance(kw.value, ast.Constant)}
    return names


def test_every_stream_event_is_documented_and_no_other() -> None:
    stream = DOC.split("### `GET /api/stream`", 1)[1]
    documented = set(re.findall(r"^- `(\w+)`:", stream, re.MULTILINE))
    assert documented == _published_events()
