"""Schemathesis against kvwatch's own OpenAPI schema, over a real uvicorn with collected data behind it:
no 5xx, no status code or response body the schema does not document, no wrong content type.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.hardening.world import TOKEN, World, served_world

# The stream never ends; everything else is fuzzed.
SKIPPED = {"/api/stream"}
EXAMPLES_PER_OPERATION = 60  # a mode
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance, response_headers_conformance,
          status_code_conformance]
TRIED: dict[str, int] = {}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with served_world(tmp_path_factory.mktemp("fuzz")) as world:
        yield world


def operations(world: World) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{world.url}/openapi.json")
    found = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    return [op for op in found if op.path not in SKIPPED]


def test_every_operation_survives_generated_requests(world: World) -> None:
    ops = operations(world)
    assert {"/api/series", "/api/hosts", "/api/hosts/{name}/restart"} <= {op.path for op in ops}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for op, mode in itertools.product(ops, (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)):
        @settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy(generation_mode=mode), with_token=st.booleans())
        def run(case: Any, with_token: bool) -> None:
            response = case.call(base_url=world.url, headers=headers if with_token else None, timeout=30)
            TRIED[case.operation.label] = TRIED.get(case.operation.label, 0) + 1
            case.validate_response(response, checks=CHECKS)

        try:
            run()
        except Unsatisfiable:  # an operation without parameters has no invalid request to make
            assert mode is GenerationMode.NEGATIVE, op.label
    total = sum(TRIED.values())
    print(f"\nschemathesis: {total} requests over {len(TRIED)} operations: {TRIED}")
    assert total >= 10 * len(ops)
    # The app is still whole after all of it.
    assert world.services.collectors["local"].health.state == "up"


