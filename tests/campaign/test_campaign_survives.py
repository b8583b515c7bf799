"""A campaign outlives kvwatch: kill -9 of `kvwatch serve` while a step measures, and a start again, leaves
it resumed (the step goes on with the same run) and it ends with the server on a known config. A
person's restart pauses a campaign; resume and stop do what they say."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kvwatch.app.store import open_store
from tests.campaign.helpers import DONE_WITHIN_S, steps, tokens_at, wait_until_over
from tests.campaign.serve_world import free_port, kill9, serve, stop, world_without_story, write_config
from tests.simulator.test_demo_wheel import RunningDemo, kvwatch_demo


def steady_step(running: RunningDemo) -> dict[str, Any]:
    def measuring() -> dict[str, Any] | None:
        campaign = running.get("/api/campaign/demo")
        step = campaign["steps"][campaign["current"]] if campaign["current"] is not None else None
        return campaign if step is not None and step["phase"] == "steady" and campaign["current"] == 0 else None

    found: dict[str, Any] = running.until(measuring, "the first step to measure", timeout=300)
    return found


@pytest.mark.timeout(DONE_WITHIN_S + 400)
def test_kill_9_of_kvwatch_while_a_step_measures_and_a_restart_resume_the_campaign(tmp_path: Path) -> None:
    port = free_port()
    with world_without_story(tmp_path) as world:
        config = write_config(world, world.workdir, port)
        log = tmp_path / "demo.log"  # where RunningDemo.tail looks
        first = serve(config, world, log)
        try:
            running = RunningDemo(f"http://127.0.0.1:{port}", first, world.workdir, time.monotonic())
            running.until(lambda: running.get("/api/hosts"), "kvwatch to answer")
            status, plan = running.post("/api/campaign/demo/plan", {"presets": ["default", "hicache-0.88"]})
            assert status == 200, plan
            status, answer = running.post("/api/campaign/demo/start", {"campaign": plan["id"]})
            assert status == 200, answer
            before = steady_step(running)
            kill9(first)
        finally:
            stop(first)
        run_id = before["steps"][0]["run_id"]
        store = open_store(str(world.workdir / "kvwatch.db"))
        try:
            kept = [d["data"] for d in store.documents("campaign", "demo")]
        finally:
            store.close()
        assert [(c["id"], c["state"], c["steps"][0]["phase"]) for c in kept] == [(plan["id"], "running", "steady")]

        second = serve(config, world, log)
        try:
            running = RunningDemo(f"http://127.0.0.1:{port}", second, world.workdir, time.monotonic())
            running.until(lambda: running.get("/api/hosts"), "kvwatch to answer again")
            over = wait_until_over(running)
            assert over["state"] == "done", (over["reason"], over["events"])
            done = steps(over)
            assert done["default"]["run_id"] == run_id  # resumed: the same run measured, no restart
            for name, fraction in (("default", 0.85), ("hicache-0.88", 0.88)):
                assert done[name]["status"] == "measured", done[name]
                assert done[name]["measured"]["max_total_num_tokens"] == pytest.approx(tokens_at(fraction), abs=2)
                assert abs(done[name]["kv_error"]) <= 0.05
            best = over["steps"][over["best"]]
            assert best["score"] == max(s["score"] for s in over["steps"])
            now = running.get("/api/hosts/demo/controller")["current"]
            assert now["running"] and now["flags"] == over["final_flags"] == best["flags"]
        finally:
            stop(second)
    assert "Traceback" not in log.read_text(errors="replace")


@pytest.mark.timeout(600)
def test_a_persons_restart_pauses_the_campaign_and_resume_and_stop_do_what_they_say(tmp_path: Path) -> None:
    with kvwatch_demo(tmp_path) as running:
        running.until(lambda: "ready to roll" in running.story_log.read_text(), "the story's first server")
        status, plan = running.post("/api/campaign/demo/plan", {"presets": ["hicache-0.88"], "step_budget": 600})
        assert status == 200, plan
        assert running.post("/api/campaign/demo/start", {"campaign": plan["id"]})[0] == 200
        steady_step(running)
        status, restart = running.post("/api/hosts/demo/restart", {"flags": {"mem-fraction-static": 0.87}})
        assert status == 202, restart
        paused = running.until(lambda: (lambda c: c if c["state"] == "paused" else None)(
            running.get("/api/campaign/demo")), "the campaign to pause", timeout=30)
        assert paused["reason"].startswith("a person restarted the server (api ")
        assert paused["steps"][0]["status"] == "planned"  # the step runs again, from its restart, on resume
        time.sleep(10)
        assert running.get("/api/campaign/demo")["state"] == "paused"  # nothing moves while paused
        status, resumed = running.post("/api/campaign/demo/resume", {})
        assert status == 200 and resumed["state"] == "running", resumed
        running.until(lambda: running.get("/api/campaign/demo")["steps"][0]["operation_id"], "the step's restart")
        status, stopped = running.post("/api/campaign/demo/stop", {})
        assert status == 200 and stopped["state"] == "stopped", stopped
        assert stopped["reason"].startswith("stopped by api ") and stopped["final_flags"]
        assert running.post("/api/campaign/demo/resume", {})[0] == 404  # nothing active to resume
