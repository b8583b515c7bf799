"""A step planned before the server had logged its KV pool is predicted again before its restart: one that
would now run out of memory is skipped instead of started, one that fits keeps the new prediction, and a
step that had its KV prediction, or the config the host runs now, is not asked again."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

from kvwatch.app.campaign.model import Campaign, Candidate, Step
from kvwatch.app.campaign.runner import Runner
from kvwatch.app.campaign.settings import plan_from_table

START = {"model-path": "/m", "mem-fraction-static": 0.85}
BIGGER = {**START, "mem-fraction-static": 0.93}
SMALLER = {**START, "mem-fraction-static": 0.88}
OOM = {"kind": "oom", "severity": "likely", "message": "likely out of memory at 0.93: 3.1 GiB after graphs"}


@dataclass
class Host:
    """What a campaign step asks of the host's controller before it restarts anything."""

    flags: dict[str, Any]
    begun: list[dict[str, Any]] = field(default_factory=list)

    def inspect(self) -> dict[str, Any]:
        return {"running": True, "flags": dict(self.flags), "run_id": "r1"}

    def launch(self) -> Any:
        return SimpleNamespace(flags=dict(START))

    def current_run(self) -> Any:
        return SimpleNamespace(id="r1", state="running")

    def begin(self, who: str, flags: dict[str, Any]) -> Any:
        self.begun.append(flags)
        return SimpleNamespace(op_id=f"op{len(self.begun)}", run_id=f"r{len(self.begun) + 1}")


def predicted(changes: dict[str, Any]) -> dict[str, Any]:
    """The what-if once the pool is logged: 0.93 runs out of memory, anything else fits."""
    if changes.get("mem-fraction-static") == 0.93:
        return {"max_total_num_tokens": 140_000, "risks": [OOM], "basis": {"changes": changes}}
    return {"max_total_num_tokens": 116_000, "risks": [], "left_after_graphs_gib": 9.0, "basis": {"changes": changes}}


def campaign(steps: list[Step]) -> Campaign:
    plan = plan_from_table(tomllib.loads('presets = ["a", "b"]\nmin_free_gib = 6\n'), "campaign", 60.0)
    return Campaign("c1", "gpu1", plan, steps, dict(START), 0.0, state="running", started_at=0.0)


def runner(c: Campaign, host: Host, asked: list[dict[str, Any]]) -> Runner:
    def predict(changes: dict[str, Any]) -> dict[str, Any]:
        asked.append(changes)
        return predicted(changes)

    return Runner(c, cast(Any, host), cast(Any, None), lambda _: None, lambda: 10.0, predict)


UNSIZED = {"max_total_num_tokens": None, "risks": [{"kind": "unknown", "message": "nothing sizes a KV pool"}]}


def test_an_unsized_step_that_would_run_out_of_memory_is_skipped_before_its_restart() -> None:
    host = Host(dict(START))
    c = campaign([Step(Candidate("a"), dict(BIGGER), dict(UNSIZED)),
                  Step(Candidate("b"), dict(SMALLER), dict(UNSIZED))])
    asked: list[dict[str, Any]] = []
    run = runner(c, host, asked)
    run.tick()
    first = c.steps[0]
    assert first.status == "skipped" and first.reason == OOM["message"], first
    assert first.prediction is not None and first.prediction["max_total_num_tokens"] == 140_000
    assert asked == [{"mem-fraction-static": 0.93}]  # changes from what the host runs now
    assert any("skipped before its restart" in text for _, text in c.events)
    run.tick()  # the next step: predicted again, it fits, so it restarts with the new prediction
    second = c.steps[1]
    assert (second.status, second.phase, c.current) == ("running", "restarting", 1)
    assert second.prediction is not None and second.prediction["max_total_num_tokens"] == 116_000
    run.tick()
    assert host.begun == [SMALLER]  # 0.93 never started


def test_a_step_predicted_when_planned_or_run_now_is_not_asked_again() -> None:
    host = Host(dict(START))
    sized = predicted({"mem-fraction-static": 0.88})
    c = campaign([Step(Candidate("a"), dict(START), dict(UNSIZED)), Step(Candidate("b"), dict(SMALLER), sized)])
    asked: list[dict[str, Any]] = []
    run = runner(c, host, asked)
    run.tick()
    assert (c.steps[0].status, c.steps[0].phase) == ("running", "steady")  # the host runs it: measured as is
    c.steps[0].status, c.current = "measured", None
    run.tick()
    assert (c.steps[1].status, c.steps[1].phase) == ("running", "restarting")
    assert asked == [] and c.steps[1].prediction is sized


def test_without_a_pool_yet_the_step_keeps_its_plan() -> None:
    host = Host(dict(START))
    c = campaign([Step(Candidate("a"), dict(BIGGER), dict(UNSIZED))])
    run = Runner(c, cast(Any, host), cast(Any, None), lambda _: None, lambda: 10.0, lambda changes: dict(UNSIZED))
    run.tick()
    assert (c.steps[0].status, c.steps[0].phase) == ("running", "restarting")
    assert c.steps[0].prediction == UNSIZED
