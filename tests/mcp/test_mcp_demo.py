"""`kvwatch mcp` driven by the MCP SDK's own client, over stdio (the command) and streamable HTTP (/mcp on
the app), against a running `kvwatch demo` with a control token: what an agent babysitting a run does."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.mcp.agent import LIMIT, TRANSPORTS, Agent, in_thread
from tests.terminal.demo import Demo, running_demo, wait_until

TOKEN = "mcp-test-token-5d0c2a7e91f34b68"
READING = ["campaign_status", "compare", "diagnose", "hosts", "predict", "status", "wait"]
CONTROL = ["campaign_control", "campaign_plan", "campaign_start", "restart"]
BOTH = pytest.mark.parametrize("transport", sorted(TRANSPORTS))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    with running_demo(tmp_path_factory.mktemp("demo"), token=TOKEN) as running:
        yield running


def saturated(demo: Demo) -> bool:
    """The story's last run (0.88 again, after the fp8 one) is on and diagnosed kv_bound."""
    if len(demo.get("/api/runs?host=demo")) < 4:
        return False
    return bool(demo.get("/api/hosts/demo/diagnosis")["verdict"] == "kv_bound")


def talk(transport: str, demo: Demo, token: str | None, scenario: Any) -> Agent:
    """Run `scenario(agent)` with an agent connected over `transport`; the agent, its answers kept."""
    async def session() -> Agent:
        async with TRANSPORTS[transport](demo.url, token) as agent:
            await scenario(agent)
            return agent

    agent = in_thread(session)
    assert agent.oversized() == [], f"answers of {LIMIT} bytes or more: {agent.oversized()}"
    return agent


@pytest.mark.parametrize(("transport", "token", "tools"), [
    ("stdio", None, READING),
    ("stdio", TOKEN, sorted([*READING, *CONTROL])),
    ("http", None, sorted([*READING, *CONTROL])),  # the app has a token: listed, and refused without it
])
def test_tools_are_listed_with_restart_only_under_a_control_token(
        demo: Demo, transport: str, token: str | None, tools: list[str]) -> None:
    async def scenario(agent: Agent) -> None:
        assert await agent.tools() == tools
        hosts = (await agent.call("hosts")).data["hosts"]
        assert [(h["name"], h["up"]) for h in hosts] == [("demo", True)]
        assert hosts[0]["run"] == demo.get("/api/runs?host=demo")[-1]["id"]

    talk(transport, demo, token, scenario)


@BOTH
def test_wait_blocks_with_progress_then_answers_the_status(demo: Demo, transport: str) -> None:
    async def scenario(agent: Agent) -> None:
        never = await agent.call("wait", host="demo", until="completions>=100000000", timeout=3)
        assert not never.error, never.text
        assert never.data["met"] is False and never.data["waited_s"] >= 3
        assert never.data["note"].startswith("completions: ")
        assert len(never.progress) >= 1 and all(total == 3 for _, total, _ in never.progress)
        assert never.progress[0][2].startswith("waiting for completions>=100000000: completions: ")

        # the story's last run settles about 2 min after it starts, 4 min into the demo (longer under load)
        steady = await agent.call("wait", host="demo", until="steady", timeout=480)
        assert not steady.error, steady.text
        answer = steady.data
        assert answer["met"] is True and answer["until"] == "steady", (answer["note"], answer["waited_s"])
        window = demo.get(f"/api/runs/{answer['run']['id']}/steady")
        assert window["status"] == "steady" and window["filled"], window
        now = answer["now"]
        assert now["token_usage"]["unit"] == "ratio" and 0 <= now["token_usage"]["value"] <= 1
        assert now["gen_throughput"]["unit"] == "tokens/s" and now["running_req"]["unit"] == "requests"
        assert isinstance(answer["as_of"], float)
        flags = answer["run"]["non_default_flags"]
        assert "mem-fraction-static" in flags and "model-path" not in flags and len(flags) < 20

        bad = await agent.call("wait", host="demo", until="stable")
        assert bad.error and "expected steady, ready, alert, alert=RULE or completions>=N" in bad.text
        unknown = await agent.call("status", host="gpu9")
        assert unknown.error and "unknown host 'gpu9'" in unknown.text and "Traceback" not in unknown.text

    talk(transport, demo, None, scenario)


@BOTH
def test_diagnose_predict_and_compare_the_saturated_run(demo: Demo, transport: str) -> None:
    wait_until(demo, lambda: saturated(demo), "the story's last run (0.88) diagnosed kv_bound", timeout=420)

    async def scenario(agent: Agent) -> None:
        found = (await agent.call("diagnose", host="demo")).data
        assert found["verdict"] == "kv_bound", found
        facts = {e["metric"]: e for e in found["evidence"]}
        assert facts["token_usage"]["numbers"]["token_usage"] >= 0.95 and facts["token_usage"]["fact"]
        assert facts["queue_req"]["numbers"]["queue_req"] > 0

        lower = (await agent.call("predict", host="demo", flags={"mem-fraction-static": 0.85})).data
        assert lower["predicted"]["max_total_num_tokens"]["value"] == pytest.approx(116_000, rel=0.05)
        assert lower["predicted"]["max_total_num_tokens"]["unit"] == "tokens"
        assert lower["changes"] == {"mem-fraction-static": 0.85}
        refused = await agent.call("predict", host="demo", flags={"no-such-flag": 1})
        assert refused.error and "no-such-flag" in refused.text

        compared = (await agent.call("compare", host="demo", last=2)).data
        runs = demo.get("/api/runs?host=demo")
        assert [r["id"] for r in compared["runs"]] == [r["id"] for r in runs[-2:]]
        (price,) = compared["price"]
        assert price.startswith("bf16 KV instead of fp8_e4m3, mem-fraction-static 0.88 instead of 0.9: ")
        assert re.search(r"[-+]\d+ % KV tokens", price), price
        tokens = next(r for r in compared["rows"] if r["metric"] == "max_total_num_tokens")
        assert tokens["unit"] == "tokens" and tokens["values"][1] < tokens["values"][0]

    talk(transport, demo, None, scenario)


def test_resources_a_run_report_and_a_series_window(demo: Demo) -> None:
    run_id = demo.get("/api/runs?host=demo")[0]["id"]

    async def scenario(agent: Agent) -> None:
        templates = {t.uri_template for t in (await agent.client.list_resource_templates()).resource_templates}
        assert templates == {"kvwatch://runs/{run_id}/report", "kvwatch://hosts/{host}/series/{metric}"}
        report = (await agent.client.read_resource(f"kvwatch://runs/{run_id}/report")).contents[0]
        text = getattr(report, "text", "")
        assert text.startswith(f"# Run {run_id} on demo\n") and "| config |" in text and len(text) < LIMIT
        window = (await agent.client.read_resource("kvwatch://hosts/demo/series/token_usage")).contents[0]
        body = getattr(window, "text", "")
        assert len(body) < LIMIT and '"unit":"ratio"' in body and body.count("],[") < 60

    talk("stdio", demo, None, scenario)


def test_a_campaign_planned_by_an_agent_predicts_skips_and_is_stopped(demo: Demo) -> None:
    async def plan(agent: Agent) -> None:
        planned = await agent.call("campaign_plan", host="demo")
        assert not planned.error, planned.text
        assert planned.data["state"] == "planned"
        steps = {row["candidate"]: row for row in planned.data["table"]}
        assert steps["fp8-0.90"]["status"] == "skipped" and "fp8" in steps["fp8-0.90"]["why"], steps
        assert steps["hicache-0.93"]["status"] == "skipped", steps
        assert steps["hicache-0.88"]["status"] == "planned", steps

    async def read(agent: Agent) -> None:
        shown = await agent.call("campaign_status", host="demo")
        assert shown.data["state"] == "planned" and len(shown.data["table"]) == 3

    async def stop(agent: Agent) -> None:
        stopped = await agent.call("campaign_control", host="demo", action="stop")
        assert not stopped.error and stopped.data["state"] == "stopped", stopped.text
        wrong = await agent.call("campaign_control", host="demo", action="explode")
        assert wrong.error and "pause, resume, stop" in wrong.text

    talk("http", demo, TOKEN, plan)
    talk("stdio", demo, None, read)
    talk("stdio", demo, TOKEN, stop)


def test_restart_refused_without_the_token_and_accepted_with_it(demo: Demo) -> None:
    current = demo.get("/api/runs?host=demo")[-1]["id"]

    async def without(agent: Agent) -> None:
        absent = await agent.call("restart", host="demo", expected_run=current, flags={"mem-fraction-static": 0.87})
        assert absent.error and "restart" in absent.text

    async def http_without(agent: Agent) -> None:
        refused = await agent.call("restart", host="demo", expected_run=current, flags={"mem-fraction-static": 0.87})
        assert refused.error and "HTTP 401" in refused.text and "bearer token" in refused.text

    async def with_token(agent: Agent) -> None:
        invalid = await agent.call("restart", host="demo", expected_run=current, flags={"mem-fraction-static": 7})
        assert invalid.error and "HTTP 422" in invalid.text and "--mem-fraction-static" in invalid.text
        stale = await agent.call("restart", host="demo", expected_run="demo-19700101T000000",
                                 flags={"mem-fraction-static": 0.87})
        assert stale.error and "HTTP 409" in stale.text and current in stale.text

    async def http_with_token(agent: Agent) -> None:
        accepted = await agent.call("restart", host="demo", expected_run=current, flags={"mem-fraction-static": 0.87})
        assert not accepted.error, accepted.text
        assert accepted.data["accepted"] is True and accepted.data["run_id"] != current
        ready = await agent.call("wait", host="demo", until="ready", timeout=120)
        assert ready.data["met"] and ready.data["run"]["non_default_flags"]["mem-fraction-static"] == 0.87

    talk("stdio", demo, None, without)
    talk("http", demo, None, http_without)
    talk("stdio", demo, TOKEN, with_token)
    before = len(demo.get("/api/runs?host=demo"))
    talk("http", demo, TOKEN, http_with_token)
    finished = wait_until(demo, lambda: (lambda s: s if not s["busy"] and s["operation"]["outcome"] else None)(
        demo.get("/api/hosts/demo/restart")), "the restart to finish", timeout=120)
    assert finished["operation"]["outcome"] == "ok", finished["operation"]
    assert len(demo.get("/api/runs?host=demo")) == before + 1
