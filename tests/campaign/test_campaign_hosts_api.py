"""A campaign through the host's own path, as an agent or a script drives it: `POST /api/hosts/{name}/campaign`
plans and starts in one request (202, `campaign_id`), `GET` reads it in the contract's words (`predicted`,
`skipped_reason`, `best`), `DELETE` stops it; the token is required and a bad plan changes nothing."""

from __future__ import annotations

import time
from pathlib import Path

from tests.campaign.helpers import sized_run
from tests.simulator.test_demo_wheel import kvwatch_demo

PATH = "/api/hosts/demo/campaign"


def test_plan_and_start_in_one_request_then_read_and_stop_it(tmp_path: Path) -> None:
    with kvwatch_demo(tmp_path) as running:
        running.until(lambda: "ready to roll" in running.story_log.read_text(), "the story's first server")
        time.sleep(8)  # as a person would: the run registry pairs a restart with a start logged 5 s before it
        sized_run(running)
        assert running.post(PATH, None, method="GET", token=None)[0] == 404  # no campaign yet
        plan = {"candidates": [{"preset": "fp8-0.90"}, {"preset": "hicache-0.88"}],
                "objective": "gen_throughput", "step_budget_s": 600}
        assert running.post(PATH, plan, token=None)[0] == 401
        for bad in ({"candidates": []}, {"candidates": [{"preset": "hicache-0.88", "size": 2}]},
                    {"candidates": [{"flags": {}}]}, {**plan, "step_budget": "10m"}):
            status, refused = running.post(PATH, bad)
            assert status == 422, (bad, refused)
        assert running.post(PATH, None, method="GET", token=None)[0] == 404  # nothing was planned

        status, started = running.post(PATH, plan)
        assert status == 202, started
        assert started["campaign_id"] == started["id"] and started["state"] == "running"
        fp8, hicache = started["steps"]
        assert fp8["status"] == "skipped" and "vetoed" in fp8["skipped_reason"] and fp8["run_id"] is None
        assert hicache["skipped_reason"] is None and hicache["predicted"]["max_total_num_tokens"] > 0
        assert hicache["flags"]["mem-fraction-static"] == 0.88 and hicache["measured"] is None
        assert started["best"] == {"flags": None, "run_id": None}
        assert started["plan"]["step_budget_s"] == 600

        status, again = running.post(PATH, plan)
        assert status == 409, again  # one campaign a host
        read = running.post(PATH, None, method="GET", token=None)[1]
        assert read["campaign_id"] == started["campaign_id"] and read["state"] == "running"

        assert running.post(PATH, None, method="DELETE", token=None)[0] == 401
        status, stopped = running.post(PATH, None, method="DELETE")
        assert status == 200 and stopped["state"] == "stopped", stopped
        assert running.post(PATH, None, method="GET", token=None)[1]["state"] == "stopped"
        assert running.get("/api/campaign/demo")["id"] == started["campaign_id"]  # one campaign, two paths
