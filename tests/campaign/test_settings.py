"""`[hosts.campaign]`: the three ways to name candidates, the limits and budgets, and one-line errors."""

from __future__ import annotations

import tomllib

import pytest

from kvwatch.app.campaign.model import Candidate
from kvwatch.app.campaign.settings import plan_from_table
from kvwatch.app.config import parse_config
from kvwatch.app.errors import ConfigError

CONFIG = """
[[hosts]]
name = "gpu1"
ssh = "local"
server_log = "/tmp/sglang.log"
launch = "python -m sglang.launch_server --model-path /m"

[hosts.compare]
min_steady = "2m"

[hosts.campaign]
presets = ["a", "b"]
objective = "completion_rate"
max_queue = 10
max_usage = 0.98
step_budget = "20m"
total_budget = "2h"
min_free_gib = 6
on_failure = "stop"
"""


def test_the_host_table_is_handed_to_the_campaign_and_read_with_the_hosts_steady_minimum() -> None:
    host = parse_config(tomllib.loads(CONFIG), "kvwatch.toml").hosts[0]
    plan = plan_from_table(host.campaign, "hosts.gpu1.campaign", 120.0)
    assert plan.candidates == (Candidate("a", preset="a"), Candidate("b", preset="b"))
    assert (plan.objective, plan.max_queue, plan.max_usage, plan.on_failure) == ("completion_rate", 10, 0.98, "stop")
    assert (plan.step_budget_s, plan.total_budget_s, plan.min_free_gib, plan.min_steady_s) == (1200, 7200, 6, 120)


def test_a_lever_with_values_and_a_grid_make_one_candidate_each() -> None:
    lever = plan_from_table({"lever": "--mem-fraction-static", "values": [0.86, 0.88]}, "x", 300)
    assert [c.flags for c in lever.candidates] == [{"mem-fraction-static": 0.86}, {"mem-fraction-static": 0.88}]
    grid = plan_from_table({"grid": {"mem-fraction-static": [0.86, 0.88], "max-running-requests": [64, 96]}}, "x", 300)
    assert [c.name for c in grid.candidates] == [
        "mem-fraction-static 0.86, max-running-requests 64", "mem-fraction-static 0.86, max-running-requests 96",
        "mem-fraction-static 0.88, max-running-requests 64", "mem-fraction-static 0.88, max-running-requests 96"]


@pytest.mark.parametrize(("table", "words"), [
    ({}, "no candidates"),
    ({"presets": ["a"], "lever": "x", "values": [1]}, "give one of"),
    ({"lever": "mem-fraction-static"}, "`lever` needs `values`"),
    ({"grid": {"a": list(range(5)), "b": list(range(4))}}, "more than 16 candidates"),
    ({"presets": ["a"], "objective": "latency"}, "hosts.gpu1.campaign.objective"),
    ({"presets": ["a"], "max_usage": 1.5}, "between 0 and 1"),
    ({"presets": ["a"], "budget": "1h"}, "unknown setting"),
])
def test_a_bad_table_is_one_config_error_naming_the_field(table: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plan_from_table(table, "hosts.gpu1.campaign", 300)
    assert words in str(caught.value) and "\n" not in str(caught.value)
