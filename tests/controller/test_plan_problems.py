"""The restart's checks as a dry run: every refused flag of a request, each with its kind, nothing raised;
the same request that `plan_flags` refuses is the one `plan_problems` finds problems in."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.app.config.controller import ControllerConfig
from kvwatch.app.controller.errors import InvalidFlags, Vetoed
from kvwatch.app.controller.plan import Problem, plan_flags, plan_problems
from kvwatch.app.flags.argv import Launch, parse_launch
from kvwatch.app.flags.schema import Schema, load_bundled
from tests.controller.support import make_config


@pytest.fixture
def parts(tmp_path: Path) -> tuple[ControllerConfig, Schema, Launch]:
    config = make_config(tmp_path, 31234)
    schema = load_bundled("0.5.23")
    launch, errors = parse_launch(schema, config.launch)
    assert errors == []
    return config, schema, launch


def kinds(problems: list[Problem]) -> dict[str, str]:
    return {p.flag: p.kind for p in problems}


def test_a_clean_request_has_no_problem_and_plans(parts: tuple[ControllerConfig, Schema, Launch]) -> None:
    config, schema, launch = parts
    flags = {"mem-fraction-static": 0.85, "enable-hierarchical-cache": True}
    assert plan_problems(config, schema, launch, flags) == []
    assert plan_flags(config, schema, launch, flags, None)["mem-fraction-static"] == 0.85


def test_every_problem_of_one_request_is_found_with_its_kind(parts: tuple[ControllerConfig, Schema, Launch]) -> None:
    config, schema, launch = parts
    flags = {"kv-cache-dtype": "fp8_e4m3", "mem-fraction-static": 1.5, "model-path": "/models/other",
             "no-such-flag": 1}
    found = plan_problems(config, schema, launch, flags)
    assert kinds(found) == {"kv-cache-dtype": "vetoed", "mem-fraction-static": "invalid",
                            "model-path": "guarded", "no-such-flag": "invalid"}
    vetoed = next(p for p in found if p.kind == "vetoed")
    assert "degrades the model noticeably" in vetoed.message
    assert "out of range" in next(p for p in found if p.flag == "mem-fraction-static").message
    with pytest.raises(InvalidFlags):
        plan_flags(config, schema, launch, flags, None)


def test_a_vetoed_preset_and_an_unknown_one(parts: tuple[ControllerConfig, Schema, Launch]) -> None:
    config, schema, launch = parts
    assert kinds(plan_problems(config, schema, launch, None, "fp8-hicache-090")) == {"kv-cache-dtype": "vetoed"}
    with pytest.raises(Vetoed):
        plan_flags(config, schema, launch, None, "fp8-hicache-090")
    assert kinds(plan_problems(config, schema, launch, None, "nope")) == {"preset": "invalid"}
    # The launch line's own guarded value is no change: only a different one is refused.
    assert plan_problems(config, schema, launch, {"model-path": launch.flags["model-path"]}) == []


def test_a_redacted_secret_sent_back_is_no_change(parts: tuple[ControllerConfig, Schema, Launch]) -> None:
    # A server started outside kvwatch logged its --api-key; the panel shows it as <redacted> (a secret is
    # never on kvwatch's own command line) and sends the editor's flags back whole: that is no change.
    config, schema, launch = parts
    flags = {"api-key": "<redacted>", "mem-fraction-static": 0.85}
    assert plan_problems(config, schema, launch, flags) == []
    planned = plan_flags(config, schema, launch, flags, None)
    assert "api-key" not in planned and planned["mem-fraction-static"] == 0.85
    assert [p.flag for p in plan_problems(config, schema, launch, {"api-key": "sk-live-0123"})] == ["api-key"]
