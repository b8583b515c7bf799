"""What the demo plays, per config, measured from its store, is what simulator/campaign.py declares;
the README's story table and the presets' descriptions are made from that declaration."""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path
from typing import Any

from kvwatch.simulator import campaign, demo
from tests.simulator.test_demo_wheel import SPEED, kvwatch_demo

README = Path(__file__).resolve().parents[2] / "README.md"
METRICS = ("running_req", "token_usage", "queue_req", "gen_throughput")
FIELDS = {"running_req": "running", "token_usage": "usage", "queue_req": "queue", "gen_throughput": "gen_tps"}


def story_table() -> list[list[str]]:
    """The rows of the table in README's "The demo's story" section, cells stripped."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### The demo's story", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def test_the_readme_story_and_the_preset_descriptions_are_the_declaration() -> None:
    assert story_table() == [list(row) for row in campaign.story_rows(demo.STORY)]
    assert {c.preset: c.description() for c in campaign.CAMPAIGN} == demo.PRESET_DESCRIPTIONS
    tables = demo.config_tables()["presets"]
    assert {name: p["description"] for name, p in tables.items()} == demo.PRESET_DESCRIPTIONS  # type: ignore[attr-defined]
    text = README.read_text(encoding="utf-8")
    alert = re.search(r"The token-usage alert fires about (\d+) s after start", text)
    assert alert is not None and int(alert.group(1)) == campaign.ALERT_AFTER_S


def settled(running: Any, run_id: str, metric: str) -> float:
    """The median of the run's second half (its first half holds the warm-up after a restart)."""
    answer = running.get(f"/api/series?host=demo&metric={metric}&run={run_id}&max_points=100000")
    values = [v for _, v in answer["points"] if v is not None]
    assert len(values) >= 4, (run_id, metric, values)
    return float(statistics.median(values[len(values) // 2:]))


def test_the_demo_plays_each_configs_declared_numbers(tmp_path: Path) -> None:
    with kvwatch_demo(tmp_path) as running:
        last_start = sum(s or 0.0 for _, s in demo.STORY[:-1])
        time.sleep(max(running.story_start() + last_start / SPEED - time.time(), 0.0))
        runs = running.until(lambda: (lambda r: r if len(r) == len(demo.STORY) else None)(
            running.get("/api/runs?host=demo")), "the story's last run")
        assert [r["flags"].get("mem-fraction-static") for r in runs] == [
            campaign.BY_PRESET[p].flag_map["mem-fraction-static"] for p, _ in demo.STORY]
        measured: dict[str, dict[str, float]] = {}
        for run, (preset, _) in zip(runs[:-1], demo.STORY, strict=False):
            measured[preset] = {m: settled(running, run["id"], m) for m in METRICS}
            measured[preset]["kv_tokens"] = run["capacity"]["max_total_num_tokens"]
        misses = []
        for preset, values in measured.items():
            config = campaign.BY_PRESET[preset]
            assert config.kv_tokens is not None
            if not campaign.within(values["kv_tokens"], (config.kv_tokens, config.kv_tokens)):
                misses.append((preset, "kv_tokens", values["kv_tokens"]))
            for metric, name in FIELDS.items():
                expected = config.plays(name)
                if expected is not None and not campaign.within(values[metric], expected):
                    misses.append((preset, name, values[metric], expected))
        print("MEASURED", measured)
        assert not misses, measured
