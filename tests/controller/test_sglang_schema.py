"""The committed schema against SGLang's real argument parser (needs a Python with sglang installed).

Set KVWATCH_SGLANG_PYTHON to that interpreter (recipe in app/flags/extract.py). Without it these
tests skip, and fail under KVWATCH_REQUIRE_COMPONENTS=1.
"""

from __future__ import annotations

import os

import pytest

from kvwatch.app.controller.errors import InvalidFlags
from kvwatch.app.flags.extract import dump, extract_schema, schema_path
from kvwatch.app.flags.remote import SchemaCache, remote_schema
from kvwatch.app.flags.schema import load_bundled
from kvwatch.collectors.base import CommandResult
from kvwatch.collectors.local import LocalTransport
from tests.controller.support import free_port, make_config
from tests.fixtures.components import require_component


@pytest.fixture(scope="module")
def sglang_python() -> str:
    return require_component("a Python with sglang 0.5.23 (KVWATCH_SGLANG_PYTHON)",
                             os.environ.get("KVWATCH_SGLANG_PYTHON", "") or "/nonexistent/kvwatch-sglang-python")


def test_the_committed_schema_is_what_the_parser_says(sglang_python: str) -> None:
    document = extract_schema(LocalTransport(), sglang_python)
    assert document["sglang"] == "0.5.23"
    assert dump(document) == schema_path("0.5.23").read_text(encoding="utf-8")


class Counting:
    """A Runner that counts commands, to see what the cache saves."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.argvs = inner, inner.name, []

    def run(self, argv: list[str], timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        self.argvs.append(argv)
        return self.inner.run(argv, timeout=timeout, stdin=stdin)


@pytest.mark.sshd
def test_a_hosts_own_sglang_is_asked_over_ssh_once_per_version(sshd, sglang_python: str) -> None:
    runner, cache = Counting(sshd.connect()), SchemaCache()
    schema = remote_schema(runner, sglang_python, cache)
    assert schema.version == "0.5.23"
    assert schema.options == load_bundled("0.5.23").options
    assert [argv[-1] for argv in runner.argvs] == ["version", "schema"]
    assert remote_schema(runner, sglang_python, cache) is schema
    assert [argv[-1] for argv in runner.argvs] == ["version", "schema", "version"]  # no second torch import


@pytest.mark.sshd
def test_a_restart_is_validated_against_the_hosts_own_sglang(sshd, sglang_python: str, tmp_path, controllers) -> None:
    config = make_config(tmp_path, free_port(), python=sglang_python, flags_schema="remote")
    controller = controllers(config, connect=sshd.connect)
    with pytest.raises(InvalidFlags, match="fp4_e2m1"):  # a 0.5.5-0.5.13 choice, gone in 0.5.23
        controller.begin("ssh", flags={"kv-cache-dtype": "fp4_e2m1"})
    op = controller.begin("ssh", flags={"kv-cache-dtype": "bf16", "mem-fraction-static": 0.88})
    done = controller.wait(120)
    assert done is op
    assert op.outcome == "ok", op.detail
    assert controller.schema().version == "0.5.23"
